#pragma once
// The weight and bias of Linear, Conv2d and Conv1d: W plain, or
// weight-normalized (Salimans & Kingma 2016; the fused op in
// autograd/weight_norm.h),
//
//   W_o = g_o · v_o / ‖v_o‖      for each output o: a row of Linear's W, a
//                                filter of a convolution's, the norm taken
//                                over all of it
//
// v starts from the layer's init and g from ‖v_o‖, so W starts exactly where
// the plain layer's would (torch.nn.utils.weight_norm does the same). The
// data-dependent init of Salimans' CIFAR code (the layers' init_from_batch)
// ends in init_from_output: from t, the layer's output on one batch with
// every g_o = 1 and no bias,
//
//   μ_o, σ_o² = mean and (biased) variance of output o over the batch
//   g_o ← 1 / sqrt(σ_o² + 1e-10),   b_o ← −μ_o · g_o
//
// after which output o has zero mean and unit variance on that batch. (The
// 1e-10 is Salimans' code's; without a bias only g is set.)
//
// Parameter names: "weight"; with weight norm "weight_v" (W's shape) and
// "weight_g" [O]; the layer adds "bias" [O].
#include <cstdint>

#include "rmsgrad/layers/module.h"

namespace rg {

class WeightedLayer : public Layer {
 public:
  Var effective_weight() const;  // `weight`, or weight_norm(weight_v, weight_g)
  bool has_weight_norm() const { return weight_v.defined(); }

  Var weight;              // [O, ...]; undefined under weight norm
  Var weight_v, weight_g;  // [O, ...] and [O]; defined only under weight norm
  Var bias;                // [O]; undefined without bias

 protected:
  // Registers w [O, ...] as "weight", or as "weight_v" with "weight_g" = ‖w_o‖.
  void register_weight(Tensor w, bool weight_norm);
  // Sets g (and b) from t [n, O, per], the output with every g_o = 1 and no
  // bias: output o's values are t[:, o, :].
  void init_from_output(const Tensor& t, int64_t n, int64_t per);
};

}  // namespace rg
