#pragma once
// Adam (Kingma & Ba, 2015, arXiv:1412.6980) and AdamW's decoupled weight decay
// (Loshchilov & Hutter, 2019, arXiv:1711.05101), as torch.optim.Adam / AdamW
// (torch 1.13, amsgrad off) compute them. For a parameter p with gradient g,
// on its t-th update (t counts this parameter's own updates, from 1):
//
//   WeightDecay::L2 (torch.optim.Adam):  g ← g + λ·p
//   WeightDecay::Decoupled (AdamW):      p ← p·(1 − lr·λ)
//   m ← β1·m + (1 − β1)·g
//   v ← β2·v + (1 − β2)·g²
//   with bias correction:    p ← p − lr/(1 − β1^t) · m / (√v / √(1 − β2^t) + ε)
//   without bias correction: p ← p − lr · m / (√v + ε)
//
// m and v start at zero. With bias correction the first update moves every
// weight by lr·g/(|g| + ε) ≈ lr·sign(g), whatever the gradient's scale.
// β1^t and β2^t use the CURRENT betas, so after set_beta1(0.5) the correction
// is 1 − 0.5^t from then on (as torch, which reads the group's betas each step).
// Scalars are computed in double, the per-element update in float32, in one
// fused pass over p, g, m and v (parallel over the elements of big tensors).
//
// State names: "adam.m.<param>", "adam.v.<param>", "adam.step.<param>", "adam.step".
#include <cstddef>
#include <vector>

#include "rmsgrad/optim/optimizer.h"

namespace rg {

enum class WeightDecay {
  L2,         // λ·p added to the gradient (torch.optim.Adam's weight_decay)
  Decoupled,  // p scaled by (1 − lr·λ) before the Adam step (torch.optim.AdamW)
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // λ
  WeightDecay decay = WeightDecay::L2;
  bool bias_correction = true;
};

// torch.optim.AdamW's defaults: decoupled decay λ = 0.01.
inline AdamOptions adamw_options(double lr = 1e-3, double weight_decay = 1e-2) {
  return AdamOptions{.lr = lr, .weight_decay = weight_decay, .decay = WeightDecay::Decoupled};
}

class Adam : public OptimizerWithOptions<AdamOptions> {
 public:
  // No groups yet; add them with add_group.
  Adam() : OptimizerWithOptions("adam") {}
  // One group holding every parameter.
  explicit Adam(const NamedParameters& parameters, const AdamOptions& options = {});

  // Appends a group with its own options; returns its index.
  size_t add_group(const NamedParameters& parameters, const AdamOptions& options);

  // β1 can change during training (the CIFAR recipe: 0.9, then 0.5).
  void set_beta1(double beta1);  // every group
  void set_beta1(size_t group, double beta1);

 protected:
  void update(size_t group, ParameterSlot& slot) override;
};

}  // namespace rg
