#include "rmsgrad/layers/dropout.h"

#include "rmsgrad/core/error.h"

namespace rg {

namespace {
float checked_p(float p) {
  check(p >= 0.0f && p < 1.0f, "Dropout: p must be in [0, 1), got {}", p);
  return p;
}
float checked_stddev(float stddev) {
  check(stddev >= 0.0f, "GaussianNoise: stddev must be ≥ 0, got {}", stddev);
  return stddev;
}
}  // namespace

Dropout::Dropout(float p, uint64_t seed) : RandomLayer(seed), p_(checked_p(p)) {}
Dropout::Dropout(float p, Generator& gen) : RandomLayer(gen), p_(checked_p(p)) {}

Var Dropout::forward(const Var& x, int batch_axis) {
  check(x.defined(), "Dropout: undefined input");
  return dropout(x, p_, is_training(), gen(), batch_axis);  // the op in autograd/mask_ops.cpp
}

Var Dropout::forward_relu(const Var& x, int batch_axis) {
  check(x.defined(), "Dropout: undefined input");
  return relu_dropout(x, p_, is_training(), gen(), batch_axis);
}

GaussianNoise::GaussianNoise(float stddev, uint64_t seed) : RandomLayer(seed), stddev_(checked_stddev(stddev)) {}
GaussianNoise::GaussianNoise(float stddev, Generator& gen) : RandomLayer(gen), stddev_(checked_stddev(stddev)) {}

Var GaussianNoise::forward(const Var& x, int batch_axis) {
  check(x.defined(), "GaussianNoise: undefined input");
  if (!is_training() || stddev_ == 0.0f) return x;
  // The noise is a constant: the add passes dy straight through to x.
  return x + constant(normal(x.shape(), 0.0f, stddev_, gen(), batch_axis));
}

}  // namespace rg
