#pragma once
// Batch normalization (Ioffe & Szegedy 2015) as one fused op.
#include "rmsgrad/autograd/var.h"

namespace rg {

struct BatchNormState {
  Tensor running_mean;  // [C], updated in place in training mode
  Tensor running_var;   // [C], unbiased batch variance, as PyTorch keeps it
  float momentum = 0.1f;  // running = (1 − momentum)·running + momentum·batch
  float eps = 1e-5f;
};

// x [N, C] or [N, C, ...]: statistics per channel C over all other axes.
// training: batch statistics, and the running ones updated outside the tape;
// otherwise the running statistics.
Var batch_norm(const Var& x, const Var& gain, const Var& bias, BatchNormState& state, bool training);

}  // namespace rg
