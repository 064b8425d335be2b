// The bidirectional attentive reader; the equations are in attentive_reader.h.
#include "rmsgrad/models/attentive_reader.h"

#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/init.h"

namespace rg {

ReaderCell parse_reader_cell(std::string_view name) {
  if (name == "lstm") return ReaderCell::LSTM;
  if (name == "gru") return ReaderCell::GRU;
  throw Error(fmt::format("unknown recurrent cell '{}' (expected lstm or gru)", name));
}

ReaderAttention parse_reader_attention(std::string_view name) {
  if (name == "mlp") return ReaderAttention::MLP;
  if (name == "bilinear") return ReaderAttention::Bilinear;
  throw Error(fmt::format("unknown attention '{}' (expected mlp or bilinear)", name));
}

AttentiveReader::AttentiveReader(const AttentiveReaderOptions& options, Generator& gen, Generator& noise_gen)
    : options_(options) {
  const AttentiveReaderOptions& o = options_;
  check(o.vocab_size > 0 && o.embed_dim > 0 && o.hidden > 0,
        "AttentiveReader: vocab_size, embed_dim and hidden must be positive, got {}, {}, {}", o.vocab_size,
        o.embed_dim, o.hidden);
  check(o.dropout >= 0.0f && o.dropout < 1.0f, "AttentiveReader: dropout must be in [0, 1), got {}", o.dropout);
  const int64_t both = 2 * o.hidden;
  const int64_t attention_size = o.attention > 0 ? o.attention : both;
  const int64_t joint_size = o.joint > 0 ? o.joint : both;
  options_.attention = attention_size;
  options_.joint = joint_size;

  register_module("words", words, std::make_shared<Embedding>(o.vocab_size, o.embed_dim, gen, o.embed_stddev));
  if (o.cell == ReaderCell::LSTM) {
    register_module("document", document_lstm, std::make_shared<BiLSTM>(o.embed_dim, o.hidden, o.norm, gen));
    register_module("query_forward", query_forward_lstm, std::make_shared<LSTM>(o.embed_dim, o.hidden, o.norm, gen, false));
    register_module("query_backward", query_backward_lstm, std::make_shared<LSTM>(o.embed_dim, o.hidden, o.norm, gen, true));
  } else {
    GRUInit init;
    init.stddev = o.embed_stddev;
    register_module("document", document_gru, std::make_shared<BiGRU>(o.embed_dim, o.hidden, o.norm, gen, init));
    register_module("query_forward", query_forward_gru, std::make_shared<GRU>(o.embed_dim, o.hidden, o.norm, gen, false, init));
    register_module("query_backward", query_backward_gru, std::make_shared<GRU>(o.embed_dim, o.hidden, o.norm, gen, true, init));
  }
  // "Norm only inside the LSTM" (../shared/PAPER.md): the attention's terms
  // stay unnormalized.
  if (o.attention_kind == ReaderAttention::MLP) {
    register_module("attention", attention, std::make_shared<MLPAttention>(both, both, attention_size, NormOptions{}, gen));
  } else {
    LinearOptions no_bias;
    no_bias.bias = false;
    register_module("bilinear", bilinear, std::make_shared<Linear>(both, both, gen, no_bias));
  }
  register_module("joint", joint, std::make_shared<Linear>(2 * both, joint_size, gen));
  output_words = register_parameter("output_words", init_normal(Shape{o.vocab_size, joint_size}, o.embed_stddev, gen));
  register_module("dropout", dropout, std::make_shared<Dropout>(o.dropout, noise_gen));
}

// s(t) = softmax_t(y_d(t) · W_s u) over the real tokens, r = Σ_t s(t) y_d(t)
// (Chen et al. 2016's bilinear match in place of Hermann's tanh layer).
AttentionOutput AttentiveReader::attend_bilinear(const Var& y_d, const Var& u, const Tensor& mask) {
  const int64_t steps = y_d.dim(0), batch = y_d.dim(1), both = y_d.dim(2);
  Var match = reshape(bilinear->forward(u), {1, batch, both});
  Var scores = sum(y_d * match, 2);  // [Td, B]
  if (mask.defined()) {
    Tensor padding = Tensor::empty(mask.shape());
    for (int64_t i = 0; i < mask.numel(); ++i) padding.data()[i] = mask.data()[i] == 0.0f ? 1.0f : 0.0f;
    scores = masked_fill(scores, padding, -1e9f);
  }
  Var weights = softmax(scores, 0);
  return {sum(reshape(weights, {steps, batch, 1}) * y_d, 0), weights};
}

Var AttentiveReader::encode_document(const Var& x, const Tensor& mask) {
  return document_lstm ? document_lstm->forward(x, mask) : document_gru->forward(x, mask);
}

// The forward reader's state after the query's last real token and the
// backward reader's state after its first: padded steps carry the state
// unchanged, so both are the states the runs end in.
Var AttentiveReader::encode_query(const Var& x, const Tensor& mask) {
  if (query_forward_lstm)
    return concat({query_forward_lstm->run(x, mask).last.h, query_backward_lstm->run(x, mask).last.h}, 1);
  return concat({query_forward_gru->last_state(x, mask), query_backward_gru->last_state(x, mask)}, 1);
}

AttentiveReader::Output AttentiveReader::forward(const ReaderInputs& in) {
  check(in.document.shape.rank() == 2 && in.query.shape.rank() == 2,
        "AttentiveReader: document {} and query {} must be [T, B] ids", in.document.shape, in.query.shape);
  const int64_t batch = in.document.shape[1];
  check(in.query.shape[1] == batch, "AttentiveReader: document batch {} and query batch {} differ", batch,
        in.query.shape[1]);
  check(in.candidates.shape.rank() == 2 && in.candidates.shape[0] == batch &&
            in.candidate_padding.shape() == in.candidates.shape,
        "AttentiveReader: candidates {} and their padding {} must be [{}, K]", in.candidates.shape,
        in.candidate_padding.shape(), batch);

  Var y_d = encode_document(dropout->forward(words->forward(in.document), 1), in.document_mask);  // [Td, B, 2H]
  Var u = encode_query(dropout->forward(words->forward(in.query), 1), in.query_mask);             // [B, 2H]
  AttentionOutput read = attention ? attention->forward(u, attention->precompute(y_d), y_d, in.document_mask)
                                   : attend_bilinear(y_d, u, in.document_mask);
  Var g = dropout->forward(tanh(joint->forward(concat({read.context, u}, 1))));  // [B, G]

  // score[b, k] = W_out[candidate b, k] · g_b
  Var answer_vectors = embedding(output_words, in.candidates);                   // [B, K, G]
  Var scores = sum(answer_vectors * reshape(g, {batch, 1, options_.joint}), 2);  // [B, K]
  return {masked_fill(scores, in.candidate_padding, -1e9f), read.weights};
}

Var AttentiveReader::loss(const ReaderInputs& in, const Indices& answers) {
  return cross_entropy(forward(in).scores, answers);
}

}  // namespace rg
