#pragma once
// A LLaMA-style language model (Touvron et al. 2023): a decoder-only
// Transformer with pre-norm, rotary positions and a SwiGLU feed-forward, its
// norms any of the paper's (RMSNorm, LLaMA's own, by default):
//
//   x       = E[ids]                                   [B, T, d]   no scaling, no position table
//   block   x = x + Attn(norm1(x))                     causal, h heads, Q and K rotated by position
//           x = x + W₂(silu(W₁ norm2(x)) ⊙ W₃ norm2(x))                SwiGLU
//   output  logits = norm(x) W_outᵀ                    [B, T, V]; W_out = E when tied
//
// No projection has a bias and nothing drops out. Each block is a
// DecoderOnlyBlock (layers/transformer.h) with pre-norm, rotary_base, swiglu
// and bias = false; the attention scales by 1/√(d/h).
//
// Parameter names, and Hugging Face's LlamaForCausalLM names for the same:
//   embed_tokens.weight                  model.embed_tokens.weight
//   layers.i.norm1.gain                  model.layers.i.input_layernorm.weight
//   layers.i.self_attn.q_proj.weight     model.layers.i.self_attn.q_proj.weight  (k_proj, v_proj alike)
//   layers.i.self_attn.out_proj.weight   model.layers.i.self_attn.o_proj.weight
//   layers.i.norm2.gain                  model.layers.i.post_attention_layernorm.weight
//   layers.i.linear1.weight              model.layers.i.mlp.gate_proj.weight     (Meta's w1)
//   layers.i.linear3.weight              model.layers.i.mlp.up_proj.weight       (w3)
//   layers.i.linear2.weight              model.layers.i.mlp.down_proj.weight     (w2)
//   norm.gain                            model.norm.weight
//   lm_head.weight                       lm_head.weight                          untied only
// LayerNorm adds a .bias to each norm; none has no norm parameters. Tied, the
// output projection is embed_tokens.weight itself: one parameter under one
// name, whose gradient sums both of its uses.
//
// Rotary embeddings pair unit i of a head with unit i + d/(2h): the
// rotate-half convention of GPT-NeoX and HF (autograd/rotary.h). HF's
// checkpoints use it; Meta's originals pair neighbours and need the rows of
// W_q and W_k permuted.
//
// Init: the embedding and every projection N(0, 0.02²) (HF's
// initializer_range), gains 1, LayerNorm biases 0.
//
// Training on ids [B, T + 1]: the inputs are the first T columns, the targets
// the last T, and
//   Var logits = model.forward(inputs);                                    // [B, T, V]
//   Var loss = cross_entropy(reshape(logits, {B * T, V}), targets);        // targets [B·T], flattened
//
// Sampling. A LlamaCache keeps each block's keys (rotated) and values of every
// position fed so far, so forward(ids, cache) runs the new positions only, at
// O(t) per position, and gives the logits forward() gives there for the
// whole sequence (up to the order of float sums; tests/test_llama.cpp).
// generate() feeds the prompt through it one token at a time, then samples,
// within the training window (LlamaOptions::context).
#include <cstdint>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/attention.h"
#include "rmsgrad/layers/embedding.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/layers/sequential.h"
#include "rmsgrad/layers/transformer.h"

namespace rg {

struct LlamaOptions {
  int64_t vocab = 0;          // V; required
  int64_t layers = 4;
  int64_t model_size = 256;   // d
  int64_t heads = 4;          // h; d/h even (rotary pairs)
  int64_t ffn_size = 688;     // SwiGLU's hidden width; LLaMA's ≈ 8d/3, rounded up
  NormOptions norm = {.kind = NormKind::RMSNorm};  // every norm; ε = norm.eps, pRMSNorm's fraction norm.p
  float rotary_base = 10000.0f;  // 0: no position information at all
  bool tie_embeddings = false;   // the output projection is the embedding
  float init_stddev = 0.02f;
  // The positions the model was trained to see (its training window): once
  // generate() has fed this many, each new token is predicted from the
  // previous context − 1 only, as in training, by starting the cache again
  // from them. 0: no limit (the cache grows, and positions it never saw in
  // training come into play).
  int64_t context = 0;
};

// Each block's keys and values [B, t, d] for the t positions fed so far.
struct LlamaCache {
  std::vector<KeyValues> layers;  // empty until the first forward(ids, cache)
  int64_t length() const { return layers.empty() ? 0 : layers.front().length(); }
};

class Llama : public Module {
 public:
  explicit Llama(const LlamaOptions& options, Generator& init_gen = default_generator());

  // ids [B, T] → logits [B, T, V]; position t sees positions ≤ t.
  Var forward(const Indices& ids);
  // ids [B, t] at positions cache.length(), … → logits [B, t, V]; their keys
  // and values join the cache. After the first call t must be 1.
  Var forward(const Indices& ids, LlamaCache& cache);

  // `count` tokens sampled after `prompt` (not empty; the prompt itself is
  // not returned): each drawn by sample_token from the logits that follow
  // the tokens before it. No gradient is recorded.
  std::vector<int32_t> generate(const std::vector<int32_t>& prompt, int64_t count, float temperature = 1.0f,
                                int64_t top_k = 0, Generator& gen = default_generator());

  const LlamaOptions& options() const { return options_; }

  std::shared_ptr<Embedding> embed_tokens;
  std::shared_ptr<ModuleList<DecoderOnlyBlock>> layers;
  std::shared_ptr<Norm> norm;
  std::shared_ptr<Linear> lm_head;  // null when tied

 private:
  Var output_logits(const Var& x);  // x [B, T, d] → norm, then W_out
  LlamaOptions options_;
  Generator noise_;  // the blocks' dropout generator; p = 0, never drawn
};

// One token from logits [V]: at temperature 0 the largest (the first of
// equals); otherwise a draw from softmax(logits / temperature) over the top_k
// largest logits (every logit when top_k is 0), through topk and multinomial.
int32_t sample_token(const Tensor& logits, float temperature, int64_t top_k, Generator& gen);

}  // namespace rg
