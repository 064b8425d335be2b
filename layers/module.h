#pragma once
// Module: the base of every layer and model.
//
// A module registers its parameters, buffers and submodules BY NAME in its
// constructor; names nest with dots, so a model's parameter reads
// "encoder.gru.norm_x.gain". named_parameters() is the one source of truth for
// optimizers, checkpoints and logs — nothing is addressed by position.
//
//   class Affine : public Module {
//    public:
//     Affine(int64_t n) { w = register_parameter("weight", Tensor::ones(Shape{n})); }
//     Var forward(const Var& x) { return x * w; }
//     Var w;
//   };
//
// A submodule lives in a member of its parent, and is registered with that
// member: register_module("norm", norm, make_norm(options, n)) stores the
// module in `norm` and records where it is. The registry reads the member
// itself, so forward (which calls the member) and everything else
// (named_parameters, save, load, train/eval) always see the same module.
// Replacing a part of a model is therefore one line, either way:
//
//   llama.set_submodule("layers.0.norm1", std::make_shared<MyNorm>(512));  // by its dotted path
//   (*llama.layers)[0].norm1 = std::make_shared<MyNorm>(512);               // by its member: the same
//
// set_submodule checks that the new module fits the member's type and gives
// it the parent's train/eval mode; an optimizer made before the replacement
// still holds the old parameters, so make the optimizer after it (as in
// PyTorch).
//
// Parameters are Vars that require gradients and live outside the tape.
// Buffers are tensors that are saved and loaded but not trained (BatchNorm's
// running statistics). train() / eval() switch every submodule at once.
//
// Most layers map one Var to one Var; they derive from Layer, whose virtual
// forward is what Sequential chains (layers/sequential.h). A model with
// several inputs or outputs (a GRU, an encoder-decoder) stays a plain Module
// with a forward of its own signature.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "rmsgrad/autograd/var.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/random.h"

namespace rg {

// Parameters by their dotted path ("encoder.gru.norm_x.gain"), in
// registration order: what optimizers, checkpoints and the gradient
// reduction across processes take.
using NamedParameters = std::vector<std::pair<std::string, Var>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its submodules, in registration order.
  NamedParameters named_parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  std::vector<Var> parameters() const;
  // The random generators the modules own (a Dropout's), by name: a training
  // state saves their positions, so a resumed run draws what an uninterrupted
  // one would (optim/save_load.h).
  std::vector<std::pair<std::string, Generator*>> named_generators() const;
  int64_t parameter_count() const;  // number of scalars

  // The submodule at a dotted path ("layers.0.norm1"); an rg::Error naming
  // the first part of the path that does not exist, with what does.
  Module& get_submodule(const std::string& path) const;
  // Replaces the submodule at a dotted path (PyTorch's name): the member that
  // held it now holds `module`, which must be of that member's type.
  void set_submodule(const std::string& path, std::shared_ptr<Module> module);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();

 protected:
  Var register_parameter(const std::string& name, Tensor value);
  Tensor register_buffer(const std::string& name, Tensor value);
  void register_generator(const std::string& name, Generator& generator);
  // Stores `module` in `member` (a member of this module, or an element of a
  // container whose elements never move, as std::deque's) and registers it
  // under `name`.
  template <class M, class V>
  void register_module(const std::string& name, std::shared_ptr<M>& member, std::shared_ptr<V> module) {
    static_assert(std::is_base_of_v<Module, M> && std::is_convertible_v<V*, M*>,
                  "register_module: the module must convert to the member's type");
    check_submodule_name(name);
    member = std::move(module);
    std::shared_ptr<M>* slot = &member;
    add_submodule({.name = name,
                   .get = [slot]() -> Module* { return slot->get(); },
                   .set = [slot](const std::shared_ptr<Module>& m) {
                     std::shared_ptr<M> typed = std::dynamic_pointer_cast<M>(m);
                     if (!typed) return false;
                     *slot = std::move(typed);
                     return true;
                   },
                   .type = type_name(typeid(M))});
  }
  // The form without a member is gone: a submodule the registry held apart
  // from the member forward uses could be replaced in one and not the other.
  template <class M>
  void register_module(const std::string&, std::shared_ptr<M>) {
    static_assert(sizeof(M) == 0, "register_module(name, member, module): pass the member that holds the "
                                  "submodule (see layers/module.h)");
  }

 private:
  struct Submodule {
    std::string name;
    std::function<Module*()> get;                              // the member's module
    std::function<bool(const std::shared_ptr<Module>&)> set;  // false when the module is not of its type
    std::string type;                                          // the member's type, for messages
  };
  static void check_submodule_name(const std::string& name);
  static std::string type_name(const std::type_info& type);
  void add_submodule(Submodule submodule);
  Module& child(const Submodule& submodule, const std::string& prefix) const;  // throws when the member is null
  void collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Var>>& out) const;
  void collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_generators(const std::string& prefix, std::vector<std::pair<std::string, Generator*>>& out) const;

  std::vector<std::pair<std::string, Var>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, Generator*>> generators_;
  std::vector<Submodule> submodules_;
  bool training_ = true;
};

// A module with one input and one output, y = forward(x).
class Layer : public Module {
 public:
  virtual Var forward(const Var& x) = 0;
  Var operator()(const Var& x) { return forward(x); }
};

}  // namespace rg
