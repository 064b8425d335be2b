// Helpers shared by the optimizer and clipping tests: a trainable leaf with
// given values, and a gradient written by hand.
#pragma once

#include <initializer_list>

#include "rmsgrad/autograd/var.h"

namespace rg::test {

inline Var param(Shape shape, std::initializer_list<float> values) {
  return Var(Tensor::from(shape, values), true);
}

inline void set_grad(Var& v, std::initializer_list<float> values) {
  v.grad().copy_from(Tensor::from(v.shape(), values));
}

}  // namespace rg::test
