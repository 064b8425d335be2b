#pragma once
// Fused ops of attention (layers/attention.h), one node where the composed
// form kept full-size intermediates that no backward needs.
#include <cstdint>
#include <memory>

#include "rmsgrad/autograd/norm_ops.h"
#include "rmsgrad/autograd/var.h"

namespace rg {

// y = tanh(a + b), a and b broadcast to y's shape (NumPy rules). Saves only y:
// the composed tanh(a + b) also kept the sum [S, B, A] of every decoder step.
Var add_tanh(const Var& a, const Var& b);

// Bahdanau's attention weights (layers/attention.h's MLPAttention) over a
// time-major source, in one op: the query's norm, tanh, the score and the
// masked softmax.
//   projected [S, B, A]   P, the normalized context term (precompute)
//   state_term [B, A]     s W_sᵀ, the decoder state's term before its norm
//   score_weight [1, A], score_bias [1]   v and b_v
//   mask [S, B]           1 = real source position, or undefined
// → α [S, B]:
//   q = norm_state(state_term),  e_j = v · tanh(P_j + q) + b_v
//   α_j = exp(e_j) / Σ_real exp(e_k) at real positions, exactly 0 at padded ones
// Backward, with T_j = tanh(P_j + q) and δ = dL/dα:
//   de_j = α_j (δ_j − Σ_k α_k δ_k)                    (0 where α_j is)
//   dP_j += de_j v ⊙ (1 − T_j²),  dq = Σ_j de_j v ⊙ (1 − T_j²)
//   dv += Σ_{j,b} de_j T_j,       db_v += Σ_{j,b} de_j
// and dq through norm_state's row backward to state_term. Saves T [S, B, A]
// and α, nothing of size [S, B] besides: the same function from primitives
// (add_tanh, a one-column product, masked_fill, softmax, masked_fill) is
// seven nodes a decoder step, each keeping its output. A batch item with no
// real position is an error.
Var bahdanau_weights(const Var& projected, const Var& state_term, const RowNorm& norm_state,
                     const Var& score_weight, const Var& score_bias, const Tensor& mask = {});

// The attention's weighted sum over positions:
//   weights [S, B], values [S, B, C] → y [B, C],  y[b, c] = Σ_s weights[s, b] · values[s, b, c]
//   dweights[s, b] += Σ_c g[b, c] · values[s, b, c],   dvalues[s, b, c] += g[b, c] · weights[s, b]
// Saves nothing beyond its inputs: the composed sum(weights ⊙ values, 0) also
// kept the product [S, B, C] of every decoder step.
Var weighted_sum(const Var& weights, const Var& values);

// The values [S, B, C] that every decoder step of a batch attends to, each
// through its own weighted sum. Plain (from a Var) each step's backward adds
// its dvalues into the values' whole [S, B, C] gradient: T steps, 2T passes
// over it. gathered() instead makes one node over the values: each step's
// backward keeps its g [B, C] and weights [S, B], and when backward reaches
// the node it adds every step's dvalues in one pass, with the same roundings
// in the same order as the steps would have. That gives the same bits when
// the steps' gradient is the first the values receive: make the gathered
// values after every other use of them (RNNSearch::encode does).
class AttentionValues {
 public:
  AttentionValues(const Var& values);  // plain: a context is a Var where nothing is gathered (decoding, tests)
  static AttentionValues gathered(const Var& values);

  const Var& var() const { return values_; }  // [S, B, C]
  int64_t dim(int axis) const { return values_.dim(axis); }
  // One step's Σ_s weights[s, b] · values[s, b, :]: weights [S, B] → [B, C].
  Var weighted_sum(const Var& weights) const;

  struct StepGradients;  // what the gathered node collects from the steps

 private:
  AttentionValues(Var values, std::shared_ptr<StepGradients> steps);
  Var values_;
  std::shared_ptr<StepGradients> steps_;  // gathered only
};

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

// Multi-head attention's two products, each head read and written in place
// in [B, T, H·d] (autograd/head_products.cpp), where splitting the heads out
// to [B·H, T, d] and merging them back copied every query, key, value and
// output, and their gradients, once more:
//   head_scores(q [B, Tq, H·d], k [B, Tk, H·d]) → s [B, H, Tq, Tk],
//     s[b, h] = Q_bh K_bhᵀ,    dQ_bh += G_bh K_bh,    dK_bh += G_bhᵀ Q_bh
//   head_mix(w [B, H, Tq, Tk], v [B, Tk, H·d]) → o [B, Tq, H·d],
//     O_bh = W_bh V_bh,        dW_bh += G_bh V_bhᵀ,   dV_bh += W_bhᵀ G_bh
// where X_bh is the [T, d] matrix of head h of sentence b: rows H·d apart,
// starting h·d into its sentence. Products through gemm_grid (core/gemm.h).
Var head_scores(const Var& q, const Var& k, int64_t heads);
Var head_mix(const Var& weights, const Var& v, int64_t heads);

}  // namespace rg
