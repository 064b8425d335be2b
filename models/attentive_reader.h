#pragma once
// The bidirectional attentive reader (Hermann et al. 2015), the model Zhang &
// Sennrich 2019 (Table 6, Figure 5) train with each norm inside its LSTMs.
//
// A question is a document d (Td tokens), a query q with a slot, and
// candidate answers a_1 … a_K that occur in the document. With E-dim word
// vectors and recurrent layers of H units:
//
//   y_d(t) = [→h_d(t) ; ←h_d(t)]       bidirectional LSTM over d       [Td, B, 2H]
//   u      = [→h_q(|q|) ; ←h_q(1)]     the query read both ways        [B, 2H]
//   m(t)   = tanh(W_ym y_d(t) + W_um u)                                 [Td, B, A]
//   s(t)   = softmax_t(w_msᵀ m(t))     over the document's real tokens
//   r      = Σ_t s(t) y_d(t)           what the query found            [B, 2H]
//   g      = tanh(W_rg r + W_ug u)     the joint reading               [B, G]
//   score(a_k) = W_out[a_k] · g        softmax over the K candidates only
//
// The attention (m, s, r) is layers/attention.h's MLPAttention with no norm
// (ReaderAttention::Bilinear instead scores s(t) ∝ exp(y_d(t) · W_s u), as
// Chen et al. 2016 do);
// g is one Linear over [r ; u]; W_out is an output vector per vocabulary word
// (only candidates are ever scored). The loss is the cross-entropy of the
// answer among its question's candidates; padded candidate slots score −∞.
//
// Normalization goes only inside the recurrent layers, in the LSTM's three
// places (layers/lstm.h) or the GRU's four groups (layers/gru.h, the GRU
// option). Dropout (p) is applied to the word vectors of document and query
// and to g. Initialisation (../shared/PAPER.md): Xavier uniform, square
// recurrent blocks orthogonal; word vectors and W_out N(0, 0.1²).
#include <cstdint>
#include <memory>
#include <string_view>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/attention.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/embedding.h"
#include "rmsgrad/layers/gru.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/lstm.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"

namespace rg {

enum class ReaderCell { LSTM, GRU };
ReaderCell parse_reader_cell(std::string_view name);  // "lstm" | "gru"
enum class ReaderAttention { MLP, Bilinear };
ReaderAttention parse_reader_attention(std::string_view name);  // "mlp" | "bilinear"

struct AttentiveReaderOptions {
  int64_t vocab_size = 0;
  int64_t embed_dim = 240;
  int64_t hidden = 240;     // per direction
  int64_t attention = 0;    // A; 0: 2·hidden
  int64_t joint = 0;        // G; 0: 2·hidden
  NormOptions norm;         // inside the recurrent layers only
  ReaderCell cell = ReaderCell::LSTM;
  ReaderAttention attention_kind = ReaderAttention::MLP;
  float dropout = 0.5f;
  float embed_stddev = 0.1f;
};

// One minibatch, time-major (experiments/attentive_reader/reader_batches.h
// builds them).
struct ReaderInputs {
  const Indices& document;         // [Td, B]
  const Tensor& document_mask;     // [Td, B], 1 = real token
  const Indices& query;            // [Tq, B]
  const Tensor& query_mask;        // [Tq, B]
  const Indices& candidates;       // [B, K] vocabulary ids
  const Tensor& candidate_padding; // [B, K], 1 = padding slot
};

class AttentiveReader : public Module {
 public:
  // Weights are drawn from `init_gen`; dropout masks from `noise_gen`, which
  // must outlive the model (a driver checkpoints it to resume exactly).
  AttentiveReader(const AttentiveReaderOptions& options, Generator& init_gen, Generator& noise_gen);

  // The candidates' scores [B, K] (padding slots −1e9) and the attention
  // weights s [Td, B].
  struct Output {
    Var scores, attention;
  };
  Output forward(const ReaderInputs& in);
  // Mean cross-entropy of the answers [B] (positions among the candidates).
  Var loss(const ReaderInputs& in, const Indices& answers);

  const AttentiveReaderOptions& options() const { return options_; }

  std::shared_ptr<Embedding> words;
  std::shared_ptr<BiLSTM> document_lstm;
  std::shared_ptr<LSTM> query_forward_lstm, query_backward_lstm;
  std::shared_ptr<BiGRU> document_gru;
  std::shared_ptr<GRU> query_forward_gru, query_backward_gru;
  std::shared_ptr<MLPAttention> attention;  // MLP attention
  std::shared_ptr<Linear> bilinear;         // bilinear attention: W_s
  std::shared_ptr<Linear> joint;
  Var output_words;  // W_out [V, G]
  std::shared_ptr<Dropout> dropout;

 private:
  Var encode_document(const Var& x, const Tensor& mask);
  Var encode_query(const Var& x, const Tensor& mask);
  AttentionOutput attend_bilinear(const Var& y_d, const Var& u, const Tensor& mask);
  AttentiveReaderOptions options_;
};

}  // namespace rg
