#pragma once
// Fused ops of MLP attention (layers/attention.h), one node where the
// composed form kept a full-size intermediate per decoder step that no
// backward needs.
#include "rmsgrad/autograd/var.h"

namespace rg {

// y = tanh(a + b), a and b broadcast to y's shape (NumPy rules). Saves only y:
// the composed tanh(a + b) also kept the sum [S, B, A] of every decoder step.
Var add_tanh(const Var& a, const Var& b);

// The attention's weighted sum over positions:
//   weights [S, B], values [S, B, C] → y [B, C],  y[b, c] = Σ_s weights[s, b] · values[s, b, c]
// Saves nothing beyond its inputs: the composed sum(weights ⊙ values, 0) also
// kept the product [S, B, C] of every decoder step.
Var weighted_sum(const Var& weights, const Var& values);

}  // namespace rg
