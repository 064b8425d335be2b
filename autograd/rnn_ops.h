#pragma once
// Fused recurrent-cell ops.
#include "rmsgrad/autograd/norm_ops.h"
#include "rmsgrad/autograd/var.h"

namespace rg {

// One GRU state update from pre-activations that have already been
// projected:
//   x_gates, h_gates [B, 2H]  input and recurrent terms of the reset gate r
//                             (first H columns) and update gate u (last H)
//   x_cand, h_cand   [B, H]   input and recurrent terms of the candidate
//   h_prev           [B, H]
//   mask             [B] or undefined: 1 for real steps, 0 for padding
// returns h [B, H]:
//   r = σ(x_r + h_r),  u = σ(x_u + h_u),  c = tanh(x_c + r ⊙ h_c)
//   h = u ⊙ h_prev + (1 − u) ⊙ c            where mask = 1
//   h = h_prev                              where mask = 0
// The recurrent terms may be normalized inside the same pass: h_gates by
// norm_gates (over all 2H units of a row jointly) and h_cand by norm_cand,
// exactly as the normalized GRU's norm_h_gates and norm_h_cand would before
// the update (layers/gru.h), so that one kernel per time step each way does
// the norms, the gates and the state update.
Var gru_update(const Var& x_gates, const Var& h_gates, const Var& x_cand, const Var& h_cand, const Var& h_prev,
               const Tensor& mask = {}, const RowNorm& norm_gates = {}, const RowNorm& norm_cand = {});

}  // namespace rg
