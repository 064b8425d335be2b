#pragma once
// Batch normalization (Ioffe & Szegedy 2015) as one fused op.
#include <functional>
#include <span>

#include "rmsgrad/autograd/var.h"

namespace rg {

// Synchronised BatchNorm for data-parallel training: with a sum set in its
// state, batch_norm in training mode computes its statistics over the whole
// global batch, not over this process's share, by summing its per-channel
// sums (and counts) over the processes with it; backward sums Σ δ and Σ δ x̂
// the same way for dx (the gain's and bias's gradients stay this process's
// part: the gradient reducer adds those). The result is then one process's
// BatchNorm on the whole batch. An empty function (the default) keeps
// per-process statistics. dist/ supplies the sum (ProcessGroup::sum); every
// process must call it in the same order, which the same model on every
// process does.
using StatisticsSum = std::function<void(std::span<double>)>;

struct BatchNormState {
  Tensor running_mean;  // [C], updated in place in training mode
  Tensor running_var;   // [C], unbiased batch variance, as PyTorch keeps it
  float momentum = 0.1f;  // running = (1 − momentum)·running + momentum·batch
  float eps = 1e-5f;
  StatisticsSum sum = {};  // synchronised over the processes when set (above)
};

// x [N, C] or [N, C, ...]: statistics per channel C over all other axes.
// training: batch statistics, and the running ones updated outside the tape;
// otherwise the running statistics.
Var batch_norm(const Var& x, const Var& gain, const Var& bias, BatchNormState& state, bool training);

}  // namespace rg
