#pragma once
// The Transformer's encoder and decoder layers (Vaswani et al. 2017), with
// every normalization of the paper in either of two places.
//
// Post-norm (the 2017 paper, Zhang & Sennrich's Table 4): the norm follows
// each residual sum.
//   encoder   x = norm1(x + SelfAttn(x))
//             x = norm2(x + FFN(x))
//   decoder   x = norm1(x + CausalSelfAttn(x))
//             x = norm2(x + CrossAttn(x, memory))
//             x = norm3(x + FFN(x))
// Pre-norm (T5, LLaMA, Gemma): the norm is applied to each sublayer's input,
// and the residual path is never normalized; the stack then needs one final
// norm after its last layer (models/transformer.h adds it).
//   encoder   x = x + SelfAttn(norm1(x))
//             x = x + FFN(norm2(x))
//   decoder   x = x + CausalSelfAttn(norm1(x))
//             x = x + CrossAttn(norm2(x), memory)
//             x = x + FFN(norm3(x))
// where FFN is one of (options.feed_forward)
//   relu     FFN(x) = W₂ dropout(relu(W₁x + b₁)) + b₂         (the default)
//   gelu     FFN(x) = W₂ dropout(gelu(W₁x + b₁)) + b₂         (BERT, GPT-2; erf form)
//   swiglu   FFN(x) = W₂ dropout(silu(W₁x + b₁) ⊙ (W₃x + b₃)) + b₂
// SwiGLU (Shazeer 2020, as in LLaMA): W₁ is LLaMA's gate (w1), W₃ its up
// projection (w3), W₂ its down projection (w2); Shazeer and LLaMA write it
// without biases (options.bias = false). Every sublayer's output passes
// through dropout before it joins the residual sum. Attention weights have
// their own dropout (MultiHeadAttention).
//
// A decoder-only (GPT-style, LLaMA) stack is a stack of DecoderOnlyBlocks:
// the encoder layer's two sublayers with a causal self-attention, in which
// each position attends to itself and the positions before it, and nothing
// else; step() then decodes it incrementally. The two share one
// implementation (SelfAttentionLayer) and differ in that mask only. With
// options.rotary_base > 0 the self-attentions rotate their queries and keys
// by position (RoFormer; autograd/rotary.h), the cross-attention never.
//
// These are torch.nn.TransformerEncoderLayer / TransformerDecoderLayer with
// norm_first = false (post) or true (pre) and activation relu or gelu, with
// torch's parameter names (linear1, linear2, norm1, norm2, norm3, self_attn;
// our cross_attn is torch's multihead_attn; linear3 is SwiGLU's W₃) except
// inside the attentions, whose q_proj, k_proj and v_proj torch packs into one
// in_proj_weight; a DecoderOnlyBlock is torch's TransformerEncoderLayer with
// a causal src_mask. tests/test_transformer.cpp checks the encoder and decoder
// layers against PyTorch on the same weights; tests/test_llama.cpp the
// decoder-only block, causal, rotary and SwiGLU.
//
// Incremental decoding. At inference the decoder emits one position at a
// time; recomputing the whole prefix at every position would cost O(t²) per
// position. A DecoderLayerCache instead keeps, per layer, the projected keys
// and values of the positions already decoded (self-attention) and of the
// source (cross-attention, computed once), so position t costs O(t): step()
// adds one position and attends over the cache. Causal masking is implicit,
// since the cache holds only the past. Cached decoding computes exactly what
// forward() computes for the same prefix (up to float summation order). A
// DecoderOnlyBlock decodes the same way with a KeyValues of its own.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/attention.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"

namespace rg {

enum class NormPosition { Post, Pre };
NormPosition parse_norm_position(std::string_view name);  // "post" or "pre"; throws otherwise
std::string norm_position_name(NormPosition position);

enum class FeedForwardKind { ReLU, GELU, SwiGLU };
FeedForwardKind parse_feed_forward(std::string_view name);  // "relu", "gelu" or "swiglu"; throws otherwise
std::string feed_forward_name(FeedForwardKind kind);

struct TransformerLayerOptions {
  int64_t model_size = 512;      // d_model
  int64_t ffn_size = 2048;       // the feed-forward's hidden width
  int64_t heads = 8;
  NormOptions norm = {.kind = NormKind::LayerNorm};
  NormPosition norm_position = NormPosition::Post;
  float dropout = 0.1f;            // on each sublayer's output and the FFN's hidden layer
  float attention_dropout = 0.0f;  // on the attention weights
  WeightInit init = {};            // of every projection; Xavier uniform by default
  FeedForwardKind feed_forward = FeedForwardKind::ReLU;
  bool bias = true;                // every projection's bias, attention and feed-forward (LLaMA: none)
  float rotary_base = 0.0f;        // > 0: rotary embeddings in the self-attention (LLaMA: 10000); 0: none
};

// Self-attention, then the feed-forward, each around its norm and residual:
// what an encoder layer and a decoder-only block both compute. Use them by
// their names below; this is the implementation they share.
class SelfAttentionLayer : public Module {
 public:
  // x [B, S, D], key_mask [B, S] (1 = real token) or undefined → [B, S, D];
  // causal in a DecoderOnlyBlock.
  Var forward(const Var& x, const Tensor& key_mask = {});

  std::shared_ptr<MultiHeadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2, linear3;  // the feed-forward network; linear3 SwiGLU's only
  std::shared_ptr<Norm> norm1, norm2;
  std::shared_ptr<Dropout> dropout;  // on each sublayer's output and the FFN's hidden layer

 protected:
  // `name`, the class's, begins its error messages.
  SelfAttentionLayer(const TransformerLayerOptions& options, bool causal, const char* name, Generator& init_gen,
                     Generator& noise_gen);
  // The feed-forward sublayer, with its norm and residual.
  Var feed_forward_sublayer(const Var& h);

  TransformerLayerOptions options_;
  bool causal_;
  const char* name_;
};

// The encoder's layer: every position attends to every real position.
class TransformerEncoderLayer : public SelfAttentionLayer {
 public:
  TransformerEncoderLayer(const TransformerLayerOptions& options, Generator& init_gen, Generator& noise_gen);
};

// A decoder-only stack's block (GPT; LLaMA with pre-norm, rotary and SwiGLU,
// models/llama.h): position i attends to positions ≤ i only.
class DecoderOnlyBlock : public SelfAttentionLayer {
 public:
  DecoderOnlyBlock(const TransformerLayerOptions& options, Generator& init_gen, Generator& noise_gen);

  // Incremental decoding: x [B, t, D], the t positions that follow the
  // cache's → [B, t, D], appending their keys and values to the cache. Once
  // the cache holds a position, t must be 1; the first call may bring a whole
  // prompt. Rotary positions continue from cache.length().
  Var step(const Var& x, KeyValues& cache);
};

// A decoder layer's state during incremental decoding, for B rows.
struct DecoderLayerCache {
  KeyValues self;   // the decoded positions' projected keys and values [B, t, D]; empty at t = 0
  KeyValues cross;  // the source's [B, S, D], projected once
  Tensor memory_mask;  // [B, S] or undefined
  // The cache of rows[0], rows[1], ... (repeats allowed), as beam search needs.
  DecoderLayerCache select_rows(const std::vector<int32_t>& rows) const;
};

class TransformerDecoderLayer : public Module {
 public:
  TransformerDecoderLayer(const TransformerLayerOptions& options, Generator& init_gen, Generator& noise_gen);

  // Teacher forcing: x [B, T, D] (causal self-attention), memory [B, S, D] the
  // encoder's output; masks [B, T] and [B, S] (1 = real) or undefined.
  Var forward(const Var& x, const Var& memory, const Tensor& target_mask = {}, const Tensor& memory_mask = {});

  // The empty cache for decoding against `memory` (projects its keys and values).
  DecoderLayerCache start(const Var& memory, const Tensor& memory_mask = {});
  // One position: x [B, 1, D] → [B, 1, D]; appends its keys and values to the cache.
  Var step(const Var& x, DecoderLayerCache& cache);

  std::shared_ptr<MultiHeadAttention> self_attn, cross_attn;
  std::shared_ptr<Linear> linear1, linear2, linear3;  // linear3: SwiGLU's only
  std::shared_ptr<Norm> norm1, norm2, norm3;
  std::shared_ptr<Dropout> dropout;

 private:
  // The three sublayers around their norms and residuals; `self_attention`
  // computes the (causal or cached) self-attention of its normalized input.
  template <typename SelfAttention>
  Var run(const Var& x, SelfAttention&& self_attention, const KeyValues& cross, const Tensor& memory_mask);
  TransformerLayerOptions options_;
};

// Sinusoidal position encodings (Vaswani et al. §3.5), [positions, size]:
//   PE[t, 2i] = sin(t / 10000^(2i/size)),  PE[t, 2i+1] = cos(t / 10000^(2i/size))
// starting at position `first`. A constant: nothing is learned.
Tensor sinusoidal_positions(int64_t positions, int64_t size, int64_t first = 0);

}  // namespace rg
