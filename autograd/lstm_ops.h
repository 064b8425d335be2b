#pragma once
// Fused pointwise parts of the LSTM cell (Hochreiter & Schmidhuber 1997; the
// normalized cell of Zhang & Sennrich 2019 §2 puts norm_c between the two).
//
// Gate order along the 4H axis is PyTorch's: i (input), f (forget), g (cell
// candidate), o (output), each H columns wide.
//
//   gates = lstm_gates(x_term, h W_hᵀ, norm_h)         x_term + norm_h(h W_hᵀ)
//   c = lstm_cell_state(gates, c_prev, mask)           the carried, unnormalized cell
//   h = lstm_hidden(gates, c, h_prev, mask, norm_c)    the output, o ⊙ tanh(norm_c(c))
//
// The two norms run inside the ops (a RowNorm, norm_ops.h), or, for a norm no
// kernel can run, as their own ops between them: lstm_gates(x_term,
// norm_h(hW), {}) and lstm_hidden(gates, norm_c(c), h_prev, mask, {}).
// c leaves the second op because it is carried to the next step, and h
// needs every gate of a row normalized together, so three ops per step.
#include "rmsgrad/autograd/norm_ops.h"
#include "rmsgrad/autograd/var.h"

namespace rg {

// x_term, h_term [B, 4H] → gates = x_term + norm_h(h_term) [B, 4H], each row
// of h_term normalized over all 4H units together.
Var lstm_gates(const Var& x_term, const Var& h_term, const RowNorm& norm_h = {});

// gates [B, 4H] pre-activations, c_prev [B, H], mask [B] (1 = real step) or
// undefined → c [B, H]:
//   i = σ(a_i), f = σ(a_f), g = tanh(a_g)
//   c = f ⊙ c_prev + i ⊙ g     where mask = 1
//   c = c_prev                 where mask = 0
// The o columns of `gates` receive no gradient from this op.
Var lstm_cell_state(const Var& gates, const Var& c_prev, const Tensor& mask = {});

// gates [B, 4H], c [B, H], h_prev [B, H], mask [B] or undefined → h [B, H]:
//   h = σ(a_o) ⊙ tanh(norm_c(c))  where mask = 1
//   h = h_prev                    where mask = 0
// Only the o columns of `gates` receive a gradient from this op.
Var lstm_hidden(const Var& gates, const Var& c, const Var& h_prev, const Tensor& mask = {},
                const RowNorm& norm_c = {});

}  // namespace rg
