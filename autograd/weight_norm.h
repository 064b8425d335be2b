#pragma once
// Weight normalization as one fused op (Salimans & Kingma 2016, "Weight
// Normalization: A Simple Reparameterization to Accelerate Training of Deep
// Neural Networks").
//
// Each output unit's weight vector is split into a direction v and a length g:
//
//   W_i = g_i · v_i / ‖v_i‖            v [out, ...], g [out], W like v
//
// where row i is everything of v at output index i (a dense row [in], or a
// conv filter [in, kh, kw] flattened), so one op serves Linear and Conv2d.
// With v̂_i = v_i / ‖v_i‖ and G = dL/dW, backward is (paper Eq. 3):
//
//   dL/dg_i = G_i · v̂_i
//   dL/dv_i = (g_i / ‖v_i‖) · (G_i − (G_i · v̂_i) v̂_i)
//
// The gradient of v is G scaled and projected away from v, so it is
// orthogonal to v: ‖v‖ grows only through second-order effects.
//
// There is no ε, as in the paper and torch.nn.utils.weight_norm; a row of v
// with zero norm throws rg::Error. Saved for backward: 1/‖v_i‖ per row.
#include "rmsgrad/autograd/var.h"

namespace rg {

Var weight_norm(const Var& v, const Var& g);

// ‖v_i‖ for every row of v [out, ...], summed in double: the g with which
// W = v, where a weight-normed layer starts (torch.nn.utils.weight_norm too).
Tensor weight_norm_gains(const Tensor& v);

}  // namespace rg
