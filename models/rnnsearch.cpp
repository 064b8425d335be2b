// RNNSearch; the equations are in rnnsearch.h.
#include "rmsgrad/models/rnnsearch.h"

#include <cmath>

#include "rmsgrad/autograd/attention_ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/init.h"

namespace rg {

SourceEncoding SourceEncoding::select_rows(const std::vector<int32_t>& rows) const {
  const int64_t steps = mask.dim(0), batch = mask.dim(1), picked = static_cast<int64_t>(rows.size());
  Tensor picked_mask = Tensor::empty(Shape{steps, picked});
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t r = 0; r < picked; ++r) {
      const int32_t row = rows[static_cast<size_t>(r)];
      check(row >= 0 && row < batch, "SourceEncoding::select_rows: row {} outside [0, {})", row, batch);
      picked_mask.data()[t * picked + r] = mask.data()[t * batch + row];
    }
  return {index_select(context.var(), 1, rows), index_select(projected, 1, rows), picked_mask,
          index_select(initial_state, 0, rows)};
}

RNNSearch::RNNSearch(const RNNSearchOptions& options, Generator& gen, Generator& noise_gen) : options_(options) {
  RNNSearchOptions& o = options_;
  check(o.source_vocab > 0 && o.target_vocab > 0 && o.embed > 0 && o.hidden > 0,
        "RNNSearch: vocabularies and sizes must be positive, got source {} target {} embed {} hidden {}",
        o.source_vocab, o.target_vocab, o.embed, o.hidden);
  check(o.dropout >= 0.0f && o.dropout < 1.0f, "RNNSearch: dropout must be in [0, 1), got {}", o.dropout);
  check(o.norm.kind != NormKind::BatchNorm, "RNNSearch: batchnorm is not one of the paper's MT norms");
  check(std::isfinite(o.init_center), "RNNSearch: init_center must be finite, got {}", o.init_center);
  const int64_t context = 2 * o.hidden;
  if (o.attention <= 0) o.attention = context;
  GRUInit gru_init;
  gru_init.stddev = o.init_stddev;
  gru_init.center = o.init_center;
  LinearOptions dense;
  dense.init.kind = WeightInitKind::Normal;
  dense.init.stddev = o.init_stddev;
  dense.init.center = o.init_center;
  dense.weight_norm = o.norm.kind == NormKind::WeightNorm;

  auto words = [&](int64_t vocab) {
    return std::make_shared<Embedding>(vocab, o.embed, gen, o.init_stddev, o.init_center);
  };
  register_module("source_words", source_words, words(o.source_vocab));
  register_module("target_words", target_words, words(o.target_vocab));
  register_module("encoder", encoder, std::make_shared<BiGRU>(o.embed, o.hidden, o.norm, gen, gru_init));
  register_module("init_state", init_state, std::make_shared<Linear>(context, o.hidden, gen, dense));
  register_module("norm_init", norm_init, make_norm(o.norm, o.hidden));
  register_module("decoder", decoder, std::make_shared<ConditionalGRU>(o.embed, o.hidden, context, o.attention,
                                                                          o.norm, gen, gru_init));
  register_module("output_state", output_state, std::make_shared<Linear>(o.hidden, o.embed, gen, dense));
  register_module("output_previous", output_previous, std::make_shared<Linear>(o.embed, o.embed, gen, dense));
  register_module("output_context", output_context, std::make_shared<Linear>(context, o.embed, gen, dense));
  register_module("norm_output_state", norm_output_state, make_norm(o.norm, o.embed));
  register_module("norm_output_previous", norm_output_previous, make_norm(o.norm, o.embed));
  register_module("norm_output_context", norm_output_context, make_norm(o.norm, o.embed));
  LinearOptions logits_options = dense;
  logits_options.weight_norm = false;  // the logits are never normalized
  register_module("output_words", output_words, std::make_shared<Linear>(o.embed, o.target_vocab, gen, logits_options));
  register_module("dropout", dropout, std::make_shared<Dropout>(o.dropout, noise_gen));
}

SourceEncoding RNNSearch::encode(const Indices& source, const Tensor& source_mask) {
  check_sentences(source, source_mask, "RNNSearch", "source");
  const int64_t steps = source.shape[0], batch = source.shape[1];
  Var context = encoder->forward(dropout->forward(source_words->forward(source), 1), source_mask);  // [S, B, 2H]

  // The mean of the context over each sentence's real positions.
  Tensor weights = Tensor::empty(Shape{steps, batch, 1});
  for (int64_t b = 0; b < batch; ++b) {
    float count = 0.0f;
    for (int64_t t = 0; t < steps; ++t) count += source_mask.data()[t * batch + b];
    check(count > 0.0f, "RNNSearch: source sentence {} of the batch is empty", b);
    for (int64_t t = 0; t < steps; ++t) weights.data()[t * batch + b] = source_mask.data()[t * batch + b] / count;
  }
  Var mean_context = sum(context * constant(weights), 0);  // [B, 2H]
  Var initial = tanh(norm_init->forward(init_state->forward(mean_context)));
  Var projected = decoder->attention->precompute(context);
  // Gathered last, so that its backward runs first: every decoder step's
  // gradient reaches the context in one pass, before the terms above add
  // theirs (autograd/attention_ops.h).
  return {AttentionValues::gathered(context), projected, source_mask, initial};
}

Var RNNSearch::deep_output(const Var& states, const Var& previous_words, const Var& contexts, int batch_axis) {
  Var t = tanh(norm_output_state->forward(output_state->forward(states)) +
               norm_output_previous->forward(output_previous->forward(previous_words)) +
               norm_output_context->forward(output_context->forward(contexts)));
  return output_words->forward(dropout->forward(t, batch_axis));
}

Var RNNSearch::previous_words(const Indices& target) {
  check(target.shape.rank() == 2, "RNNSearch: target ids {} must be [T, B]", target.shape);
  const int64_t steps = target.shape[0], batch = target.shape[1];
  Var first = constant(Tensor::zeros(Shape{1, batch, options_.embed}));
  if (steps == 1) return first;
  Indices shifted(Shape{steps - 1, batch}, std::vector<int32_t>(target.values.begin(), target.values.end() - batch));
  return concat({first, target_words->forward(shifted)}, 0);
}

Var RNNSearch::logits(const Indices& source, const Tensor& source_mask, const Indices& target,
                      const Tensor& target_mask) {
  check_sentences(target, target_mask, "RNNSearch", "target");
  check(source.shape[1] == target.shape[1], "RNNSearch: source batch {} and target batch {} differ",
        source.shape[1], target.shape[1]);
  const int64_t steps = target.shape[0], batch = target.shape[1];
  SourceEncoding src = encode(source, source_mask);
  Var previous = dropout->forward(previous_words(target), 1);  // [T, B, E]

  GRUCell::InputTerms terms = decoder->project_targets(previous);
  Var state = src.initial_state;
  std::vector<Var> states, contexts;
  states.reserve(static_cast<size_t>(steps));
  contexts.reserve(static_cast<size_t>(steps));
  for (int64_t t = 0; t < steps; ++t) {
    ConditionalGRU::Step step = decoder->step(at_step(terms.gates, t), at_step(terms.candidate, t), state,
                                              src.context, src.projected, src.mask, mask_at(target_mask, t));
    state = step.state;
    states.push_back(step.state);
    contexts.push_back(step.context);
  }
  Var out = deep_output(stack(states, 0), previous, stack(contexts, 0), 1);  // [T, B, V]
  return reshape(out, {steps * batch, options_.target_vocab});
}

Var RNNSearch::loss(const Indices& source, const Tensor& source_mask, const Indices& target,
                    const Tensor& target_mask) {
  Var out = logits(source, source_mask, target, target_mask);
  CrossEntropyOptions ce;
  ce.label_smoothing = options_.label_smoothing;
  ce.row_weights = target_mask.reshape(Shape{target_mask.numel()});
  ce.mean = false;
  return cross_entropy(out, Indices(target.values), ce) / static_cast<float>(target.shape[1]);
}

Var RNNSearch::token_cross_entropy(const Indices& source, const Tensor& source_mask, const Indices& target,
                                   const Tensor& target_mask) {
  CrossEntropyOptions ce;
  ce.row_weights = target_mask.reshape(Shape{target_mask.numel()});
  return cross_entropy(logits(source, source_mask, target, target_mask), Indices(target.values), ce);
}

RNNSearch::StepOutput RNNSearch::decode_step(const SourceEncoding& source, const std::vector<int32_t>& previous,
                                             const Var& state) {
  const int64_t rows = source.rows();
  check(static_cast<int64_t>(previous.size()) == rows && state.defined() && state.dim(0) == rows,
        "RNNSearch::decode_step: {} previous words and state {} for {} rows", previous.size(),
        shape_of(state), rows);
  const bool first = previous[0] < 0;
  for (int32_t word : previous)
    check((word < 0) == first, "RNNSearch::decode_step: either every row starts (−1) or none does");
  Var words = first ? constant(Tensor::zeros(Shape{rows, options_.embed}))
                    : target_words->forward(Indices(Shape{rows}, previous));
  words = dropout->forward(words);
  GRUCell::InputTerms terms = decoder->project_targets(words);
  ConditionalGRU::Step step =
      decoder->step(terms.gates, terms.candidate, state, source.context, source.projected, source.mask);
  Var logits = deep_output(step.state, words, step.context, 0);
  return {log_softmax(logits, 1), step.state, step.weights};
}

namespace {

class RNNSearchDecoding : public DecodingState {
 public:
  RNNSearchDecoding(RNNSearch& model, SourceEncoding source)
      : model_(model), source_(std::move(source)), state_(source_.initial_state) {}

  Var next(const std::vector<int32_t>& previous) override {
    RNNSearch::StepOutput out = model_.decode_step(source_, previous, state_);
    state_ = out.state;
    return out.log_probs;
  }
  // The encoding rows stay: a hypothesis never leaves its sentence.
  void reorder(const std::vector<int32_t>& parents) override { state_ = index_select(state_, 0, parents); }

 private:
  RNNSearch& model_;
  SourceEncoding source_;
  Var state_;
};

}  // namespace

std::unique_ptr<DecodingState> RNNSearch::start_decoding(const Indices& source, const Tensor& source_mask,
                                                         int64_t copies) {
  check(copies >= 1, "RNNSearch::start_decoding: copies must be at least 1, got {}", copies);
  const int64_t batch = source.shape.rank() == 2 ? source.shape[1] : 0;
  std::vector<int32_t> repeat(static_cast<size_t>(batch * copies));
  for (int64_t r = 0; r < batch * copies; ++r) repeat[static_cast<size_t>(r)] = static_cast<int32_t>(r / copies);
  return std::make_unique<RNNSearchDecoding>(*this, encode(source, source_mask).select_rows(repeat));
}

}  // namespace rg
