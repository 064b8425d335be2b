#pragma once
// Fused pointwise parts of the LSTM cell (Hochreiter & Schmidhuber 1997; the
// normalized cell of Zhang & Sennrich 2019 §2 puts norm_c between the two).
//
// Gate order along the 4H axis is PyTorch's: i (input), f (forget), g (cell
// candidate), o (output), each H columns wide.
//
//   c = lstm_cell_state(gates, c_prev, mask)         the carried, unnormalized cell
//   h = lstm_hidden(gates, norm_c(c), h_prev, mask)  the output
//
// Two ops rather than one because the normalization of c sits between them.
#include "rmsgrad/autograd/var.h"

namespace rg {

// gates [B, 4H] pre-activations, c_prev [B, H], mask [B] (1 = real step) or
// undefined → c [B, H]:
//   i = σ(a_i), f = σ(a_f), g = tanh(a_g)
//   c = f ⊙ c_prev + i ⊙ g     where mask = 1
//   c = c_prev                 where mask = 0
// The o columns of `gates` receive no gradient from this op.
Var lstm_cell_state(const Var& gates, const Var& c_prev, const Tensor& mask = {});

// gates [B, 4H], c_normed [B, H] (= norm_c(c), or c itself), h_prev [B, H],
// mask [B] or undefined → h [B, H]:
//   h = σ(a_o) ⊙ tanh(c_normed)   where mask = 1
//   h = h_prev                    where mask = 0
// Only the o columns of `gates` receive a gradient from this op.
Var lstm_hidden(const Var& gates, const Var& c_normed, const Var& h_prev, const Tensor& mask = {});

}  // namespace rg
