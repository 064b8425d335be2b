// MLP attention and multi-head attention; the equations are in attention.h.
// Both are GEMMs around fused ops (bahdanau_weights, attention_softmax,
// weighted_sum; multi-head's per-head products head_scores and head_mix)
// and rotary; the work is in the GEMMs.
#include "rmsgrad/layers/attention.h"

#include <cmath>
#include <optional>

#include "rmsgrad/autograd/attention_ops.h"
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/autograd/rotary.h"
#include "rmsgrad/core/error.h"

namespace rg {

namespace {

// Masking is two steps. Blocked scores are filled with kBlocked, so they add
// nothing measurable to the softmax's normalizer (finite, so nothing can turn
// into NaN); then the blocked weights are set to exactly 0, because the fast
// exp (core/fast_math.h) clamps its argument at −87.3 and would leave them at
// 1.2e-38. Blocked positions thus get weight 0 and gradient 0 exactly.
constexpr float kBlocked = -1e30f;

Var masked_softmax(const Var& scores, const Tensor& blocked, int axis) {
  return masked_fill(softmax(masked_fill(scores, blocked, kBlocked), axis), blocked, 0.0f);
}

// x [..., n] through `norm` as rows [N, n] (so BatchNorm sees rows too).
Var norm_rows(Norm& norm, const Var& x) {
  std::vector<int64_t> dims = x.shape().dims();
  return reshape(norm.forward(reshape(x, {-1, dims.back()})), dims);
}

}  // namespace

MLPAttention::MLPAttention(int64_t context_size, int64_t state_size, int64_t hidden_size, const NormOptions& norm,
                           Generator& gen, const WeightInit& init)
    : context_size_(context_size), state_size_(state_size), hidden_size_(hidden_size) {
  check(context_size > 0 && state_size > 0 && hidden_size > 0,
        "MLPAttention: sizes must be positive, got context {} state {} hidden {}", context_size, state_size,
        hidden_size);
  // Under weight norm the two terms' weights are reparameterised instead.
  const bool weight_norm = norm.kind == NormKind::WeightNorm;
  register_module("context_to_hidden", context_to_hidden, std::make_shared<Linear>(context_size, hidden_size, gen, LinearOptions{.weight_norm = weight_norm, .init = init}));
  register_module("state_to_hidden", state_to_hidden, std::make_shared<Linear>(state_size, hidden_size, gen,
                                                  LinearOptions{.bias = false, .weight_norm = weight_norm, .init = init}));
  register_module("hidden_to_score", hidden_to_score, std::make_shared<Linear>(hidden_size, 1, gen, LinearOptions{.init = init}));
  register_module("norm_context", norm_context, make_norm(norm, hidden_size));
  register_module("norm_state", norm_state, make_norm(norm, hidden_size));
}

Var MLPAttention::precompute(const Var& context) {
  check(context.defined() && context.rank() == 3 && context.dim(2) == context_size_,
        "MLPAttention: context {} must be [S, B, {}]", shape_of(context), context_size_);
  return norm_rows(*norm_context, context_to_hidden->forward(context));
}

AttentionOutput MLPAttention::forward(const Var& state, const Var& projected, const AttentionValues& values,
                                      const Tensor& mask) {
  const Var& context = values.var();
  check(context.defined() && context.rank() == 3 && context.dim(2) == context_size_,
        "MLPAttention: context {} must be [S, B, {}]", shape_of(context), context_size_);
  const int64_t src = context.dim(0), batch = context.dim(1);
  check(state.defined() && state.shape() == Shape{batch, state_size_}, "MLPAttention: state {} must be [{}, {}]",
        shape_of(state), batch, state_size_);
  check(projected.defined() && projected.shape() == Shape{src, batch, hidden_size_},
        "MLPAttention: projected context {} must be [{}, {}, {}] (from precompute)", shape_of(projected),
        src, batch, hidden_size_);
  if (mask.defined()) {
    check(mask.shape() == Shape{src, batch}, "MLPAttention: mask {} must be [{}, {}]", mask.shape(), src, batch);
    for (int64_t b = 0; b < batch; ++b) {
      bool any_real = false;
      for (int64_t j = 0; j < src && !any_real; ++j) any_real = mask.data()[j * batch + b] != 0.0f;
      check(any_real, "MLPAttention: batch item {} has no real source position in mask {}", b, mask.shape());
    }
  }
  Var state_term = state_to_hidden->forward(state);                              // [B, A]
  Var alpha;                                                                     // [S, B]
  if (const std::optional<RowNorm> q_norm = norm_state->row_norm()) {
    alpha = bahdanau_weights(projected, state_term, *q_norm, hidden_to_score->effective_weight(),
                             hidden_to_score->bias, mask);
    return {values.weighted_sum(alpha), alpha};
  }
  // A norm no kernel can run (composed, BatchNorm, one's own): the same
  // function from the ops themselves.
  Var q = norm_state->forward(state_term);                                       // [B, A]
  Var q_row = reshape(q, {1, batch, hidden_size_});
  Var hidden = add_tanh(projected, q_row);                                       // [S, B, A]
  Var scores = reshape(hidden_to_score->forward(hidden), {src, batch});          // [S, B]
  if (!mask.defined()) {
    alpha = softmax(scores, 0);
  } else {
    Tensor blocked = Tensor::empty(mask.shape());
    for (int64_t i = 0; i < mask.numel(); ++i) blocked.data()[i] = mask.data()[i] == 0.0f ? 1.0f : 0.0f;
    alpha = masked_softmax(scores, blocked, 0);
  }
  Var attended = values.weighted_sum(alpha);                                     // [B, C]
  return {attended, alpha};
}

KeyValues KeyValues::select_rows(const std::vector<int32_t>& rows) const {
  return {index_select(keys, 0, rows), index_select(values, 0, rows)};
}

KeyValues KeyValues::append(const KeyValues& more) const {
  if (length() == 0) return more;
  return {concat({keys, more.keys}, 1), concat({values, more.values}, 1)};
}

MultiHeadAttention::MultiHeadAttention(int64_t model_size, int64_t heads, Generator& gen,
                                       const MultiHeadAttentionOptions& options, Generator* noise_gen)
    : model_size_(model_size), heads_(heads), rotary_base_(options.rotary_base) {
  check(model_size > 0 && heads > 0 && model_size % heads == 0,
        "MultiHeadAttention: model size {} must be a positive multiple of heads {}", model_size, heads);
  check(std::isfinite(options.rotary_base) && options.rotary_base >= 0.0f,
        "MultiHeadAttention: rotary base must be 0 (none) or positive, got {}", options.rotary_base);
  check(options.rotary_base == 0.0f || (model_size / heads) % 2 == 0,
        "MultiHeadAttention: rotary embeddings need an even head size, got {} = {} / {} heads", model_size / heads,
        model_size, heads);
  const LinearOptions linear{.bias = options.bias, .init = options.init};
  register_module("q_proj", q_proj, std::make_shared<Linear>(model_size, model_size, gen, linear));
  register_module("k_proj", k_proj, std::make_shared<Linear>(model_size, model_size, gen, linear));
  register_module("v_proj", v_proj, std::make_shared<Linear>(model_size, model_size, gen, linear));
  register_module("out_proj", out_proj, std::make_shared<Linear>(model_size, model_size, gen, linear));
  const float p = options.dropout;
  if (p > 0.0f)
    register_module("dropout", dropout, noise_gen ? std::make_shared<Dropout>(p, *noise_gen)
                                                   : std::make_shared<Dropout>(p, gen.next_u64()));
}

Var MultiHeadAttention::rotate(const Var& x, int64_t first_position) const {
  if (rotary_base_ == 0.0f) return x;
  const int64_t batch = x.dim(0), steps = x.dim(1);
  Var per_head = reshape(x, {batch, steps, heads_, model_size_ / heads_});  // [B, T, h, d]
  return reshape(rotary(per_head, first_position, rotary_base_), {batch, steps, model_size_});
}

AttentionOutput MultiHeadAttention::forward(const Var& query, const Var& key, const Var& value,
                                            const Tensor& key_mask, bool causal) {
  check(key.defined() && key.rank() == 3 && key.dim(2) == model_size_,
        "MultiHeadAttention: key {} must be [B, Tk, {}]", shape_of(key), model_size_);
  check(value.defined() && value.shape() == key.shape(), "MultiHeadAttention: value {} must match key {}",
        shape_of(value), key.shape());
  return attend(query, project(key, value), key_mask, causal);
}

KeyValues MultiHeadAttention::project(const Var& key, const Var& value, int64_t first_position) {
  return {rotate(k_proj->forward(key), first_position), v_proj->forward(value)};
}

AttentionOutput MultiHeadAttention::attend(const Var& query, const KeyValues& kv, const Tensor& key_mask,
                                           bool causal, int64_t first_position) {
  check(query.defined() && query.rank() == 3 && query.dim(2) == model_size_,
        "MultiHeadAttention: query {} must be [B, Tq, {}]", shape_of(query), model_size_);
  const int64_t batch = query.dim(0), tq = query.dim(1);
  check(kv.keys.defined() && kv.keys.rank() == 3 && kv.keys.dim(0) == batch && kv.keys.dim(2) == model_size_,
        "MultiHeadAttention: keys {} must be [{}, Tk, {}] for query {}", shape_of(kv.keys), batch,
        model_size_, query.shape());
  const int64_t tk = kv.keys.dim(1);
  check(kv.values.defined() && kv.values.shape() == kv.keys.shape(), "MultiHeadAttention: values {} must match keys {}",
        shape_of(kv.values), kv.keys.shape());
  check(!key_mask.defined() || key_mask.shape() == Shape{batch, tk}, "MultiHeadAttention: key mask {} must be [{}, {}]",
        shape_of(key_mask), batch, tk);
  check(!causal || tq == tk, "MultiHeadAttention: a causal mask needs as many queries as keys, got {} and {}", tq,
        tk);
  const int64_t size = model_size_ / heads_;

  // Each head's rows read and written in place in [B, T, h·d] (autograd/attention_ops.h).
  Var q = rotate(q_proj->forward(query), first_position);          // [B, Tq, h·d]
  Var scores = head_scores(q, kv.keys, heads_);                    // Q Kᵀ per head: [B, h, Tq, Tk]
  // softmax(Q Kᵀ / sqrt(d)) over the visible keys, blocked ones exactly 0, in one fused op.
  Var weights = attention_softmax(scores, 1.0f / std::sqrt(static_cast<float>(size)), key_mask, causal);
  Var kept = dropout ? dropout->forward(weights) : weights;
  return {out_proj->forward(head_mix(kept, kv.values, heads_)), weights};  // A V per head: [B, Tq, h·d]
}

}  // namespace rg
