#pragma once
// Fused ops of attention (layers/attention.h), one node where the composed
// form kept full-size intermediates that no backward needs.
#include "rmsgrad/autograd/var.h"

namespace rg {

// y = tanh(a + b), a and b broadcast to y's shape (NumPy rules). Saves only y:
// the composed tanh(a + b) also kept the sum [S, B, A] of every decoder step.
Var add_tanh(const Var& a, const Var& b);

// The attention's weighted sum over positions:
//   weights [S, B], values [S, B, C] → y [B, C],  y[b, c] = Σ_s weights[s, b] · values[s, b, c]
// Saves nothing beyond its inputs: the composed sum(weights ⊙ values, 0) also
// kept the product [S, B, C] of every decoder step.
// When values come from attention_values (below), the backward leaves the
// values' gradient to that node: it keeps g [B, C] and the weights [S, B].
Var weighted_sum(const Var& weights, const Var& values);

// A context [S, B, C] that many decoder steps read through weighted_sum, as
// one node with the same value. Each step's backward then reads the context
// once (for its weights' gradient) and keeps its g and weights; when backward
// reaches this node it adds every step's dv = g ⊗ w into the context's
// gradient in one pass, with the same roundings in the same order as the steps
// would have: the same bits when theirs are the first gradient the context
// receives, as when this node is made after every other use of the context
// (RNNSearch::encode). Without it each step also read and wrote the whole
// [S, B, C] gradient: T steps, 2T more passes over it.
Var attention_values(const Var& values);

// Multi-head attention's weights from its scores, in one pass:
//   scores [B, H, Tq, Tk] → A [B, H, Tq, Tk],
//   A[b, h, i, :] = softmax(scale · scores[b, h, i, :]) over the keys j that
//   query i may see — key_mask[b, j] ≠ 0 (all keys when key_mask is
//   undefined) and, when causal, j ≤ i — and exactly 0 at every other key.
// Backward: dS = scale · A ⊙ (dA − Σ_j dA A), which is 0 at blocked keys
// because A is. Saves only A: the composed form (scale, fill the blocked
// scores, softmax, zero the blocked weights) kept four [B, H, Tq, Tk]
// tensors. A query that can see no key is an error.
Var attention_softmax(const Var& scores, float scale, const Tensor& key_mask = {}, bool causal = false);

}  // namespace rg
