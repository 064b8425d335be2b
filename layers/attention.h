#pragma once
// Attention: Bahdanau's MLP attention (as in Nematus, with the paper's
// normalized terms) and scaled dot-product multi-head attention.
//
// MLPAttention (Bahdanau et al. 2015; normalized as in TF Nematus, Zhang &
// Sennrich 2019 §2), over a time-major source ctx [S, B, C] with mask [S, B]:
//   P   = norm_context(ctx W_cᵀ + b_c)          [S, B, A]   precompute(), once per batch
//   q   = norm_state(s W_sᵀ)                    [B, A]      no bias (Nematus)
//   e_j = vᵀ tanh(P_j + q) + b_v                [S, B]
//   α   = softmax_j(e_j) over the real positions (padded positions get exactly 0)
//   out = Σ_j α_j ctx_j                         [B, C]
// Parameters: context_to_hidden.{weight,bias}, state_to_hidden.weight,
// hidden_to_score.{weight,bias} (v and b_v), norm_context.*, norm_state.*.
//
// MultiHeadAttention (Vaswani et al. 2017), batch-major, h heads of d = D/h:
//   Q = query W_qᵀ + b_q,  K = key W_kᵀ + b_k,  V = value W_vᵀ + b_v   [B, T, D] → [B·h, T, d]
//   A = softmax(Q Kᵀ / sqrt(d) with blocked positions at −∞)             [B, h, Tq, Tk]
//   out = concat_heads(A V) W_oᵀ + b_o                                    [B, Tq, D]
// Blocked: keys where key_mask [B, Tk] is 0, and keys after the query when
// causal (a decoder's self-attention: position i sees positions ≤ i).
// Parameters: q_proj, k_proj, v_proj, out_proj (Linear, as torch's
// MultiheadAttention names its separate projections); without biases when
// options.bias is off, as in LLaMA. With dropout p > 0 the weights A pass
// through dropout in training (as in torch).
//
// With rotary embeddings (options.rotary_base > 0; autograd/rotary.h) Q and
// K are rotated by their positions right after their projections, per head:
//   Q ← rotary(Q as [B, Tq, h, d], query positions),  K likewise
// so the scores see only the distance between a query and a key. The
// positions start at 0 for forward(), and at first_position for project()
// and attend().
//
// forward() is project() then attend(): a decoder that emits one position at
// a time keeps the projected keys and values (KeyValues) of the positions so
// far, appends each new position's (append), and attends over them, instead
// of projecting the whole prefix again (layers/transformer.h). Keys are kept
// rotated, so the positions of the cache are never rotated twice.
//
// Blocked positions get weight exactly 0 and gradient 0: MLPAttention fills
// their scores with a large negative value before the softmax and zeroes
// their weights after it; MultiHeadAttention does the scaling, the masking
// and the softmax in one fused op (attention_softmax, autograd/attention_ops.h)
// that saves only the weights. A query that can see no position at all is an
// error (checked), never a silent uniform average.
#include <cstdint>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/attention_ops.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/init.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"

namespace rg {

struct AttentionOutput {
  Var context;  // MLP: [B, C]; multi-head: [B, Tq, D]
  Var weights;  // MLP: α [S, B]; multi-head: [B, h, Tq, Tk]
};

class MLPAttention : public Module {
 public:
  // context_size C, state_size D (the decoder state), hidden_size A.
  MLPAttention(int64_t context_size, int64_t state_size, int64_t hidden_size, const NormOptions& norm,
               Generator& gen, const WeightInit& init = {});

  // ctx [S, B, C] → P [S, B, A]; reuse it for every decoder step of the batch.
  Var precompute(const Var& context);
  // state [B, D], projected = precompute(context), context [S, B, C] (a Var,
  // or AttentionValues::gathered for a training batch's decoder steps),
  // mask [S, B] (1 = real source position) or undefined.
  AttentionOutput forward(const Var& state, const Var& projected, const AttentionValues& context,
                          const Tensor& mask = {});

  std::shared_ptr<Linear> context_to_hidden, state_to_hidden, hidden_to_score;
  std::shared_ptr<Norm> norm_context, norm_state;

 private:
  int64_t context_size_, state_size_, hidden_size_;
};

// Projected keys K = key W_kᵀ + b_k and values V = value W_vᵀ + b_v, [B, Tk, D].
struct KeyValues {
  Var keys, values;
  int64_t length() const { return keys.defined() ? keys.dim(1) : 0; }
  // Rows rows[0], rows[1], ... of the batch (repeats allowed), for beam search.
  KeyValues select_rows(const std::vector<int32_t>& rows) const;
  // These followed by `more` along the time axis.
  KeyValues append(const KeyValues& more) const;
};

struct MultiHeadAttentionOptions {
  WeightInit init = {};      // of the four projections; Xavier uniform by default
  float dropout = 0.0f;      // on the attention weights, in training
  bool bias = true;          // b_q, b_k, b_v, b_o
  float rotary_base = 0.0f;  // > 0: rotary embeddings of Q and K with this base (10000 in LLaMA); 0: none
};

class MultiHeadAttention : public Module {
 public:
  // dropout: drawn from `noise_gen` (which must outlive the module), or from
  // a generator of its own seeded from `gen` when noise_gen is null.
  MultiHeadAttention(int64_t model_size, int64_t heads, Generator& gen, const MultiHeadAttentionOptions& options = {},
                     Generator* noise_gen = nullptr);

  // query [B, Tq, D], key and value [B, Tk, D] (the same Var for self-attention),
  // key_mask [B, Tk] (1 = real key) or undefined; causal blocks key k > query q
  // (needs Tq = Tk).
  AttentionOutput forward(const Var& query, const Var& key, const Var& value, const Tensor& key_mask = {},
                          bool causal = false);

  // The two halves of forward: key and value [B, Tk, D] → K, V, and the
  // attention of query [B, Tq, D] over them. first_position: the position of
  // the first key (of the first query), for rotary embeddings only.
  KeyValues project(const Var& key, const Var& value, int64_t first_position = 0);
  AttentionOutput attend(const Var& query, const KeyValues& kv, const Tensor& key_mask = {}, bool causal = false,
                         int64_t first_position = 0);

  int64_t heads() const { return heads_; }
  std::shared_ptr<Linear> q_proj, k_proj, v_proj, out_proj;
  std::shared_ptr<Dropout> dropout;  // null when p = 0

 private:
  // x [B, T, D] → each head's units rotated by positions first, first + 1, …
  // (x itself without rotary embeddings).
  Var rotate(const Var& x, int64_t first_position) const;
  int64_t model_size_, heads_;
  float rotary_base_;
};

}  // namespace rg
