#pragma once
// Regularisers that act only in training mode (Module::train / eval).
//
// Dropout (Srivastava et al. 2014), "inverted" as in PyTorch: in training
//   y = x ⊙ m / (1 − p),   m_i ~ Bernoulli(1 − p),   dx = dy ⊙ m / (1 − p)
// and in evaluation y = x, so no rescaling is needed at test time.
//
// GaussianNoise (the CIFAR code of Salimans & Kingma 2016, used by Zhang &
// Sennrich 2019 with σ = 0.15 on the whitened input): in training
//   y = x + ε,   ε_i ~ N(0, σ²),   dx = dy
// and in evaluation y = x.
//
// Each module draws from a Generator: its own (seeded at construction) or a
// caller's (shared, which must outlive the module). The same seed gives the
// same masks and noise in the same order. An owned generator is registered
// with the module ("generator"), so a training state saves its position.
// Both are RandomLayers, which keep the generator.
#include <cstdint>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/module.h"

namespace rg {

// A layer that draws in training mode, from its own Generator (seeded at
// construction and registered as "generator") or a caller's shared one.
// forward(x) takes axis 0 for the batch; forward(x, batch_axis) says which
// axis is (1 for time-major [T, B, E]), so that under a batch shard
// (core/random.h) each example keeps its draw.
class RandomLayer : public Layer {
 public:
  Var forward(const Var& x) override { return forward(x, 0); }
  virtual Var forward(const Var& x, int batch_axis) = 0;

 protected:
  explicit RandomLayer(uint64_t seed) : owned_(seed), gen_(&owned_) { register_generator("generator", owned_); }
  explicit RandomLayer(Generator& shared) : gen_(&shared) {}
  Generator& gen() { return *gen_; }

 private:
  Generator owned_;
  Generator* gen_;
};

class Dropout : public RandomLayer {
 public:
  explicit Dropout(float p, uint64_t seed = 0);
  Dropout(float p, Generator& gen);

  using RandomLayer::forward;  // forward(x): batch first
  Var forward(const Var& x, int batch_axis) override;
  // forward(relu(x)) as one op (relu_dropout): the same draws and values in
  // one pass each way instead of two.
  Var forward_relu(const Var& x, int batch_axis = 0);
  float p() const { return p_; }

 private:
  float p_;
};

class GaussianNoise : public RandomLayer {
 public:
  explicit GaussianNoise(float stddev, uint64_t seed = 0);
  GaussianNoise(float stddev, Generator& gen);

  using RandomLayer::forward;  // forward(x): batch first
  Var forward(const Var& x, int batch_axis) override;
  float stddev() const { return stddev_; }

 private:
  float stddev_;
};

}  // namespace rg
