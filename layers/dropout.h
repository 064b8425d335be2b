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
#include <cstdint>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/module.h"

namespace rg {

// Either an owned Generator or a pointer to a shared one.
class RandomSource {
 public:
  explicit RandomSource(uint64_t seed) : owned_(seed), gen_(&owned_) {}
  explicit RandomSource(Generator& shared) : gen_(&shared) {}
  RandomSource(const RandomSource&) = delete;
  RandomSource& operator=(const RandomSource&) = delete;
  Generator& gen() { return *gen_; }
  bool owned() const { return gen_ == &owned_; }

 private:
  Generator owned_;
  Generator* gen_;
};

class Dropout : public Layer {
 public:
  explicit Dropout(float p, uint64_t seed = 0);
  Dropout(float p, Generator& gen);

  Var forward(const Var& x) override;  // any shape, batch first
  // `batch_axis` says which axis is the batch (1 for time-major [T, B, E]),
  // so that under a batch shard (core/random.h) each example keeps its mask.
  Var forward(const Var& x, int batch_axis);
  float p() const { return p_; }

 private:
  float p_;
  RandomSource random_;
};

class GaussianNoise : public Layer {
 public:
  explicit GaussianNoise(float stddev, uint64_t seed = 0);
  GaussianNoise(float stddev, Generator& gen);

  Var forward(const Var& x) override;  // any shape, batch first
  Var forward(const Var& x, int batch_axis);
  float stddev() const { return stddev_; }

 private:
  float stddev_;
  RandomSource random_;
};

}  // namespace rg
