#pragma once
// Fused normalization ops: one forward kernel and one backward kernel each,
// the per-row statistics saved in between. See norm_ops.cpp for the math.
//
// RMSNorm and LayerNorm normalize ROWS. Two layouts:
//  - features: x [..., n], each row is the last axis; gain and bias are [n]
//    (one per unit), as in RNNs and dense layers;
//  - channels: x [N, C, H, W], each row is one sample's channel map (n = H·W);
//    gain and bias are [C] (one per channel), as the paper does for conv nets.
// GroupNorm normalizes groups of channels of x [N, C, *] (below).
#include <cstdint>

#include "rmsgrad/autograd/var.h"

namespace rg {

enum class NormLayout { Features, Channels };

struct RmsNormConfig {
  // pRMSNorm: the RMS is taken over the first k units of each row; 0 = all n.
  int64_t k = 0;
  float eps = 1e-5f;
  // true:  y = x / sqrt(mean(x²) + ε)  (the paper's experiment code)
  // false: y = x / (sqrt(mean(x²)) + ε) (the official rmsnorm_torch.py)
  bool eps_inside = true;
  // L2-Norm: divide by the L2 norm sqrt(Σ x² + ε) instead of the RMS.
  bool l2 = false;
};

// y = x / D(x) · g (+ b). `bias` may be an undefined Var (no bias).
Var rms_norm(const Var& x, const Var& gain, const Var& bias, const RmsNormConfig& config,
             NormLayout layout = NormLayout::Features);

// y = (x − μ) / sqrt(σ² + ε) · g + b with the biased variance σ².
Var layer_norm(const Var& x, const Var& gain, const Var& bias, float eps,
               NormLayout layout = NormLayout::Features);

// A norm as a fused kernel applies it to rows of n units inside its own pass
// (the recurrent cells of rnn_ops.h and lstm_ops.h): the kind, the parameters
// and the settings of the ops above. None leaves the row as it is.
//   Layer: layer_norm(x, gain, bias, config.eps); bias may be undefined
//   Rms:   rms_norm(x, gain, bias, config)
enum class RowNormKind { None, Layer, Rms };
struct RowNorm {
  RowNormKind kind = RowNormKind::None;
  Var gain, bias;          // [n]
  RmsNormConfig config{};  // Layer reads only its eps
};

// GroupNorm (Wu & He 2018), torch.nn.functional.group_norm: x [N, C, *] (any
// number of axes after C, none included), the C channels split into `groups`
// consecutive groups of C/groups. Each sample's group is normalized over all
// its channels and positions, with the biased variance; then each channel c is
// scaled and shifted:
//   y = (x − μ_{n,g}) / sqrt(σ²_{n,g} + ε) · weight_c + bias_c
// weight and bias are [C], or undefined (1 and 0: torch's affine = False).
// groups = 1 is LayerNorm over [C, *]; groups = C is InstanceNorm.
Var group_norm(const Var& x, int64_t groups, const Var& weight, const Var& bias, float eps = 1e-5f);

}  // namespace rg
