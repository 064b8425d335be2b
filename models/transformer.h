#pragma once
// The Transformer for translation (Vaswani et al. 2017), as in the paper's
// Table 4, with every normalization and a choice of where it goes:
//
//   encoder   x = dropout(√d · E_src[f] + PE)                       [B, S, d]
//             x = EncoderLayer_n(... EncoderLayer_1(x))             padded keys masked
//             x = norm_enc(x)                                       pre-norm only
//   decoder   y = dropout(√d · E_tgt[e_{j−1}] + PE)  (e_0: the zero vector)
//             y = DecoderLayer_n(... DecoderLayer_1(y, x))           causal, padded keys masked
//             y = norm_dec(y)                                       pre-norm only
//   output    logits = y E_tgtᵀ                                     tied to the target embedding
//   loss      cross-entropy with label smoothing 0.1, summed over the real
//             target tokens and divided by their number (per token)
//
// The layers (and post- against pre-norm) are in layers/transformer.h.
//
// Choices, and why:
// - Post-norm is the default, as in the paper's Table 4 and Vaswani et al.;
//   pre-norm adds the final norm after each stack, as T5 and LLaMA do.
// - The RMSNorm family has a gain and no bias, with ε = 1e-5 inside the
//   square root, as everywhere in this project (the authors' Transformer
//   code, "zero", uses ε = 1e-8; with activations of size ~1 the two differ
//   by nothing measurable). LayerNorm has gain and bias.
// - Projections start Xavier-uniform (the paper's setting), biases at 0;
//   embeddings start N(0, 1/d), so that √d · E has unit variance, as in
//   fairseq and tensor2tensor.
// - The target embedding and the output projection are one matrix (Press &
//   Wolf 2017), and with share_embeddings the source uses it too (a joint
//   subword vocabulary). The output has no bias.
// - The decoder starts from the zero vector (plus position 0's encoding),
//   as RNNSearch's does, rather than from a start symbol.
#include <cstdint>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/embedding.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/layers/sequential.h"
#include "rmsgrad/layers/transformer.h"
#include "rmsgrad/models/seq2seq.h"

namespace rg {

struct TransformerOptions {
  int64_t source_vocab = 0, target_vocab = 0;
  int64_t encoder_layers = 6, decoder_layers = 6;
  TransformerLayerOptions layer;  // d, FFN size, heads, norm and its position, dropout
  float label_smoothing = 0.1f;
  bool share_embeddings = false;  // source and target words in one table (needs one vocabulary)
};

class Transformer : public Seq2Seq {
 public:
  Transformer(const TransformerOptions& options, Generator& init_gen, Generator& noise_gen);

  // source ids [S, B] and mask [S, B] (time-major, as batches come) →
  // the encoder's output [B, S, d].
  Var encode(const Indices& source, const Tensor& source_mask);
  // Teacher forcing: logits [B·T, V] for target ids [T, B]; row b·T + t is
  // token t of sentence b.
  Var logits(const Indices& source, const Tensor& source_mask, const Indices& target, const Tensor& target_mask);

  // Label-smoothed, per real target token.
  Var loss(const Indices& source, const Tensor& source_mask, const Indices& target,
           const Tensor& target_mask) override;
  LossMean loss_mean() const override { return LossMean::PerToken; }
  Var token_cross_entropy(const Indices& source, const Tensor& source_mask, const Indices& target,
                          const Tensor& target_mask) override;
  std::unique_ptr<DecodingState> start_decoding(const Indices& source, const Tensor& source_mask,
                                                int64_t copies) override;
  int64_t target_vocab() const override { return options_.target_vocab; }

  const TransformerOptions& options() const { return options_; }

  // Decoding keeps each layer's keys and values (O(t) work at position t).
  // false: rerun the whole decoder on the prefix at every position instead,
  // O(t²) — the reference the cache is tested and benchmarked against.
  bool cached_decoding = true;

  std::shared_ptr<Embedding> source_words, target_words;  // the same table with share_embeddings
  std::shared_ptr<ModuleList<TransformerEncoderLayer>> encoder;
  std::shared_ptr<ModuleList<TransformerDecoderLayer>> decoder;
  std::shared_ptr<Norm> encoder_norm, decoder_norm;  // pre-norm only; null for post-norm
  std::shared_ptr<Dropout> dropout;                   // on the embedded inputs

  // ---- the pieces decoding shares with teacher forcing ----
  // dropout(x + PE) for x [B, T, d] at positions first, first + 1, ...
  Var add_positions(const Var& x, int64_t first_position);
  // The decoder's inputs [B, T, d] for the words it emitted before each
  // position: previous [B, T] holds e_{j−1}, −1 at the first position.
  Var decoder_inputs(const Indices& previous, int64_t first_position);
  // The decoder's top [N, d] → logits [N, V] (the final norm, then E_tgtᵀ).
  Var output_logits(const Var& top);

 private:
  TransformerOptions options_;
};

}  // namespace rg
