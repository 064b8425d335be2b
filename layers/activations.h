#pragma once
// Activation functions chosen by one enum, so a model asks for
// activate(x, kind) and never tests flags. The ops themselves (forward and
// backward) live in autograd/unary.cpp.
//
//   identity    y = x
//   relu        y = max(x, 0)
//   leaky_relu  y = x if x > 0 else slope · x   (the CIFAR net: slope 0.1,
//                                                 Maas et al. 2013)
//   tanh        y = tanh(x)
//   sigmoid     y = 1 / (1 + e^{−x})
#include "rmsgrad/autograd/ops.h"

namespace rg {

enum class Activation { Identity, ReLU, LeakyReLU, Tanh, Sigmoid };

inline Var activate(const Var& x, Activation kind, float leaky_slope = 0.1f) {
  switch (kind) {
    case Activation::Identity: return x;
    case Activation::ReLU: return relu(x);
    case Activation::LeakyReLU: return leaky_relu(x, leaky_slope);
    case Activation::Tanh: return tanh(x);
    case Activation::Sigmoid: return sigmoid(x);
  }
  return x;
}

}  // namespace rg
