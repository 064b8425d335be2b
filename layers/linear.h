#pragma once
// Linear (dense) layer, optionally weight-normalized.
//
//   y = x Wᵀ + b              x [..., in], W [out, in] (PyTorch's layout), b [out], y [..., out]
//
// The product is one GEMM with W read transposed in place (no copy); every
// leading axis of x folds into rows.
//
// With weight_norm on, W is not a parameter but W_i = g_i · v_i / ‖v_i‖ per
// output row (Salimans & Kingma 2016; layers/weighted_layer.h keeps W either
// way). v starts from options.init and g from ‖v_i‖, so W starts exactly where
// the plain layer would (torch.nn.utils.weight_norm does the same). The
// paper's CIFAR code then runs a data-dependent init on one batch,
// init_from_batch:
//
//   t = x v̂ᵀ                 [rows, out], v̂_i = v_i / ‖v_i‖ (no g, no bias)
//   μ_i, σ_i² = mean and (biased) variance of t[:, i] over the rows
//   g_i ← 1 / sqrt(σ_i² + 1e-10),   b_i ← −μ_i · g_i
//
// after which y_i = (t_i − μ_i) / σ_i has zero mean and unit variance on that
// batch. (The 1e-10 is Salimans' code's; without a bias only g is set.)
//
// Parameter names: "weight", "bias"; with weight norm "weight_v", "weight_g",
// "bias". weight_g has shape [out].
#include <cstdint>

#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/init.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/weighted_layer.h"

namespace rg {

struct LinearOptions {
  bool bias = true;         // b starts at 0
  bool weight_norm = false;
  WeightInit init = {};     // of W, or of v under weight norm
};

// The functional form: x [..., in], weight [out, in], bias [out] or undefined.
Var linear(const Var& x, const Var& weight, const Var& bias);

class Linear : public WeightedLayer {
 public:
  Linear(int64_t in_features, int64_t out_features, Generator& gen = default_generator(),
         const LinearOptions& options = {});
  Linear(int64_t in_features, int64_t out_features, const LinearOptions& options)
      : Linear(in_features, out_features, default_generator(), options) {}

  Var forward(const Var& x) override;

  // Salimans & Kingma's data-dependent init from a batch x [..., in] (see
  // above). Needs weight_norm; records nothing on the tape.
  void init_from_batch(const Var& x);

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

  // weight [out, in], or weight_v [out, in] and weight_g [out]; bias [out]
  // (WeightedLayer's members; effective_weight() is W either way).

 private:
  int64_t in_features_, out_features_;
};

}  // namespace rg
