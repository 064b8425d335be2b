#pragma once
// RNNSearch as Nematus builds it (Bahdanau et al. 2015; Sennrich et al. 2017),
// with the normalization placed as in TF Nematus (Zhang & Sennrich 2019 §2):
//
//   encoder   x_i = E_src[f_i]                                     [S, B, E]
//             C = [GRU→(x); GRU←(x)]                               [S, B, 2H]   BiGRU, masked
//   init      s_0 = tanh(norm_init(W_init · mean_i C_i + b_init))  mean over real positions only
//   decoder   y'_j = E_tgt[e_{j−1}] (y'_1 = 0)                    [T, B, E]
//             s'_j = GRU1(y'_j, s_{j−1})                            conditional GRU (layers/gru.h):
//             c_j  = MLPAttention(s'_j, C)                           both attention terms normalized
//             s_j  = GRU2(c_j, s'_j)
//   output    t_j = tanh(norm_s(W_s s_j + b_s) + norm_y(W_y y'_j + b_y) + norm_c(W_c c_j + b_c))   [.., E]
//             logits_j = W_o dropout(t_j) + b_o                   [.., V_tgt]   never normalized
//   loss      cross-entropy with label smoothing 0.1 against e_j, summed over the target's
//             real tokens and averaged over sentences (Nematus' per-sentence cost)
//
// Every GRU carries the paper's four normalized groups. Weights start as
// N(0, 0.01²) and square recurrent blocks orthogonal (Nematus' init); with
// init_center c every weight matrix (embeddings, GRU, attention and output
// weights) is moved by c, biases and norm gains are not (the paper's Figure 4:
// c = 0.2). Dropout (training only) acts on the word vectors and on t_j.
//
// With teacher forcing the decoder runs its recurrence step by step but
// everything that depends on a step's result only — the three deep-output
// projections and the logits — is computed for all T·B positions at once, as
// a few large GEMMs. Beam search instead calls decode_step, one position at
// a time, on an encoding whose batch rows it may repeat and reorder.
#include <cstdint>
#include <memory>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/embedding.h"
#include "rmsgrad/layers/gru.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/models/seq2seq.h"

namespace rg {

struct RNNSearchOptions {
  int64_t source_vocab = 0, target_vocab = 0;
  int64_t embed = 256;      // word vectors and the deep output
  int64_t hidden = 256;     // GRU units per direction; the context is 2·hidden
  int64_t attention = 0;    // the attention MLP's hidden size; 0: the context size 2·hidden (Nematus)
  NormOptions norm;         // none | layernorm | rmsnorm | prmsnorm | l2norm | weightnorm
  float dropout = 0.0f;     // on word vectors and on the deep output t
  float label_smoothing = 0.1f;
  float init_stddev = 0.01f;
  float init_center = 0.0f;  // added to every weight matrix's initial values (above)
};

// What the decoder needs from the source, time-major, for B rows (sentences,
// or sentences × beam after select_rows).
struct SourceEncoding {
  AttentionValues context;  // C [S, B, 2H], gathered when encoded for training (autograd/attention_ops.h)
  Var projected;            // the attention's precomputed context term [S, B, A]
  Tensor mask;              // [S, B], 1 = real token
  Var initial_state;        // s_0 [B, H]
  int64_t rows() const { return context.dim(1); }
  // The encoding of rows[0], rows[1], ... (repeats allowed): beam search
  // expands each sentence to k rows and then follows its surviving hypotheses.
  SourceEncoding select_rows(const std::vector<int32_t>& rows) const;
};

class RNNSearch : public Seq2Seq {
 public:
  RNNSearch(const RNNSearchOptions& options, Generator& init_gen, Generator& noise_gen);

  // source ids [S, B] with mask [S, B] (every sentence at least one real token).
  SourceEncoding encode(const Indices& source, const Tensor& source_mask);

  // Teacher forcing: target ids [T, B] (each sentence ends in </s>) with mask
  // [T, B] → logits [T·B, V_tgt], row t·B + b for token t of sentence b.
  Var logits(const Indices& source, const Tensor& source_mask, const Indices& target, const Tensor& target_mask);

  // y'_j for teacher forcing: zeros at the first position, then the target
  // words shifted by one position, [T, B, E] (before dropout).
  Var previous_words(const Indices& target);

  // The training cost (see above): label-smoothed, per sentence.
  Var loss(const Indices& source, const Tensor& source_mask, const Indices& target,
           const Tensor& target_mask) override;
  LossMean loss_mean() const override { return LossMean::PerSentence; }

  // Mean cross-entropy per real target token (no smoothing), for validation.
  Var token_cross_entropy(const Indices& source, const Tensor& source_mask, const Indices& target,
                          const Tensor& target_mask) override;

  // Beam search's view (models/seq2seq.h): decode_step on the encoding
  // repeated `copies` times, with the state following the hypotheses.
  std::unique_ptr<DecodingState> start_decoding(const Indices& source, const Tensor& source_mask,
                                                int64_t copies) override;
  int64_t target_vocab() const override { return options_.target_vocab; }

  struct StepOutput {
    Var log_probs;  // [B, V_tgt]
    Var state;      // s_j [B, H]
    Var weights;    // α_j [S, B]
  };
  // One decoder position for B rows: previous[b] is the word emitted at the
  // previous position, or −1 at the first position (y' = 0).
  StepOutput decode_step(const SourceEncoding& source, const std::vector<int32_t>& previous, const Var& state);

  const RNNSearchOptions& options() const { return options_; }

  std::shared_ptr<Embedding> source_words, target_words;
  std::shared_ptr<BiGRU> encoder;
  std::shared_ptr<Linear> init_state;
  std::shared_ptr<Norm> norm_init;
  std::shared_ptr<ConditionalGRU> decoder;
  std::shared_ptr<Linear> output_state, output_previous, output_context, output_words;
  std::shared_ptr<Norm> norm_output_state, norm_output_previous, norm_output_context;
  std::shared_ptr<Dropout> dropout;

 private:
  // t = tanh(norm_s(W_s s + b_s) + norm_y(W_y y' + b_y) + norm_c(W_c c + b_c)) → logits, any leading shape.
  // `batch_axis`: 1 for the whole target [T, B, ·], 0 for one step [B, ·].
  Var deep_output(const Var& states, const Var& previous_words, const Var& contexts, int batch_axis);
  RNNSearchOptions options_;
};

}  // namespace rg
