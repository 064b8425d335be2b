#pragma once
// Composition: modules made of modules.
//
//   Sequential   layers applied one after another, y = f_n(… f_2(f_1(x)));
//                its layers are named by position ("0.weight", "1.gain", …),
//                as PyTorch's nn.Sequential names them, so a checkpoint's
//                names read the same in both.
//   ModuleList   an indexed list of modules of one type, registered as
//                submodules (so their parameters reach the optimizer, the
//                checkpoint and train()/eval()), for models that call them
//                in a loop of their own: a stack of GRU layers, decoder blocks.
//   Lambda       a function of one Var as a layer (an activation, a reshape).
//   ActivationLayer   activate(x, kind) as a layer.
//   Flatten      torch.nn.Flatten(start_dim = 1, end_dim = −1): the axes
//                start_dim … end_dim merged into one (negative dims count
//                from the end), [N, C, H, W] → [N, C·H·W] by default. A
//                reshape: the same floats, the gradient reshaped back.
//
//   auto net = std::make_shared<Sequential>();
//   net->add(std::make_shared<Linear>(784, 256));
//   net->add(std::make_shared<ActivationLayer>(Activation::ReLU));
//   net->add(std::make_shared<Linear>(256, 10));
//   Var logits = net->forward(images);      // images [B, 784] → [B, 10]
#include <cstddef>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/activations.h"
#include "rmsgrad/layers/module.h"

namespace rg {

class Sequential : public Layer {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Layer>> layers);

  // Appends a layer, named by its position; returns it typed, for later use.
  template <class L>
  std::shared_ptr<L> add(std::shared_ptr<L> layer) {
    append(layer);
    return layer;
  }

  Var forward(const Var& x) override;

  size_t size() const { return layers_.size(); }
  Layer& operator[](size_t i) const;

 private:
  void append(std::shared_ptr<Layer> layer);
  std::deque<std::shared_ptr<Layer>> layers_;  // a deque: its elements never move, so the registry can hold them
};

template <class M = Module>
class ModuleList : public Module {
 public:
  // Appends a module, named by its position; returns it, typed as given.
  template <class T>
  std::shared_ptr<T> push_back(std::shared_ptr<T> module) {
    static_assert(std::is_base_of_v<M, T>, "ModuleList<M>: the module must derive from M");
    check(module != nullptr, "ModuleList: module {} is null", items_.size());
    items_.emplace_back();
    register_module(std::to_string(items_.size() - 1), items_.back(), module);
    return module;
  }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  M& operator[](size_t i) const {
    check(i < items_.size(), "ModuleList: index {} is out of range for a list of {}", i, items_.size());
    return *items_[i];
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::deque<std::shared_ptr<M>> items_;  // a deque: its elements never move, so the registry can hold them
};

class Lambda : public Layer {
 public:
  explicit Lambda(std::function<Var(const Var&)> function) : function_(std::move(function)) {}
  Var forward(const Var& x) override { return function_(x); }

 private:
  std::function<Var(const Var&)> function_;
};

class ActivationLayer : public Layer {
 public:
  explicit ActivationLayer(Activation kind, float leaky_slope = 0.1f) : kind_(kind), leaky_slope_(leaky_slope) {}
  Var forward(const Var& x) override { return activate(x, kind_, leaky_slope_); }
  Activation kind() const { return kind_; }

 private:
  Activation kind_;
  float leaky_slope_;
};

class Flatten : public Layer {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1) : start_dim_(start_dim), end_dim_(end_dim) {}
  Var forward(const Var& x) override { return flatten(x, start_dim_, end_dim_); }

 private:
  int start_dim_, end_dim_;
};

}  // namespace rg
