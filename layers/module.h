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
// Parameters are Vars that require gradients and live outside the tape.
// Buffers are tensors that are saved and loaded but not trained (BatchNorm's
// running statistics). train() / eval() switch every submodule at once.
//
// Most layers map one Var to one Var; they derive from Layer, whose virtual
// forward is what Sequential chains (layers/sequential.h). A model with
// several inputs or outputs (a GRU, an encoder-decoder) stays a plain Module
// with a forward of its own signature.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/autograd/var.h"
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

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();

 protected:
  Var register_parameter(const std::string& name, Tensor value);
  Tensor register_buffer(const std::string& name, Tensor value);
  void register_generator(const std::string& name, Generator& generator);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_submodule(name, module);
    return module;
  }

 private:
  void add_submodule(const std::string& name, std::shared_ptr<Module> module);
  void collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Var>>& out) const;
  void collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_generators(const std::string& prefix, std::vector<std::pair<std::string, Generator*>>& out) const;

  std::vector<std::pair<std::string, Var>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, Generator*>> generators_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> submodules_;
  bool training_ = true;
};

// A module with one input and one output, y = forward(x).
class Layer : public Module {
 public:
  virtual Var forward(const Var& x) = 0;
  Var operator()(const Var& x) { return forward(x); }
};

}  // namespace rg
