#pragma once
// Stochastic gradient descent with momentum, as torch.optim.SGD (torch 1.13)
// computes it. For a parameter p with gradient g, on its t-th update:
//
//   d ← g + λ·p                              (weight decay λ, L2 on the gradient)
//   with momentum μ > 0:
//     b ← d                      if t = 1    (the buffer starts as the first step)
//     b ← μ·b + (1 − τ)·d        otherwise   (dampening τ)
//     d ← d + μ·b  if nesterov, else d ← b
//   p ← p − lr·d
//
// Momentum, dampening and Nesterov are off by default (plain p ← p − lr·g).
// Nesterov needs μ > 0 and τ = 0, as in torch. A group with μ = 0 keeps no
// buffer. The update is one fused float32 pass (parallel over big tensors).
//
// State names: "sgd.momentum.<param>" (groups with μ > 0), "sgd.step.<param>",
// "sgd.step".
#include <cstddef>
#include <vector>

#include "rmsgrad/optim/optimizer.h"

namespace rg {

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;      // μ
  double dampening = 0.0;     // τ
  double weight_decay = 0.0;  // λ
  bool nesterov = false;
};

class Sgd : public OptimizerWithOptions<SgdOptions> {
 public:
  // No groups yet; add them with add_group.
  Sgd() : OptimizerWithOptions("sgd") {}
  // One group holding every parameter.
  explicit Sgd(const NamedParameters& parameters, const SgdOptions& options = {});

  // Appends a group with its own options; returns its index.
  size_t add_group(const NamedParameters& parameters, const SgdOptions& options);

 protected:
  void update(size_t group, ParameterSlot& slot) override;
};

}  // namespace rg
