// The Transformer for translation; the model and its choices are described
// in transformer.h.
#include "rmsgrad/models/transformer.h"

#include <cmath>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

// Time-major [T, B] → batch-major [B, T], for ids and masks.
Indices batch_major(const Indices& ids) {
  const int64_t steps = ids.shape[0], batch = ids.shape[1];
  std::vector<int32_t> out(ids.values.size());
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t b = 0; b < batch; ++b) out[static_cast<size_t>(b * steps + t)] = ids.values[static_cast<size_t>(t * batch + b)];
  return Indices(Shape{batch, steps}, std::move(out));
}

Tensor batch_major(const Tensor& mask) {
  const int64_t steps = mask.dim(0), batch = mask.dim(1);
  Tensor out = Tensor::empty(Shape{batch, steps});
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t b = 0; b < batch; ++b) out.data()[b * steps + t] = mask.data()[t * batch + b];
  return out;
}

// The decoder's previous words for teacher forcing: row b is −1, e_1, ..., e_{T−1}.
Indices shifted_right(const Indices& target) {
  const int64_t batch = target.shape[0], steps = target.shape[1];
  std::vector<int32_t> out(target.values.size());
  for (int64_t b = 0; b < batch; ++b) {
    out[static_cast<size_t>(b * steps)] = -1;
    for (int64_t t = 1; t < steps; ++t)
      out[static_cast<size_t>(b * steps + t)] = target.values[static_cast<size_t>(b * steps + t - 1)];
  }
  return Indices(target.shape, std::move(out));
}

std::shared_ptr<Norm> final_norm(const TransformerLayerOptions& layer) {
  return layer.norm_position == NormPosition::Pre ? make_norm(layer.norm, layer.model_size) : nullptr;
}

}  // namespace

Transformer::Transformer(const TransformerOptions& options, Generator& init_gen, Generator& noise_gen)
    : options_(options) {
  const int64_t d = options.layer.model_size;
  check(options.source_vocab > 0 && options.target_vocab > 0, "Transformer: vocabularies must be non-empty, got {} and {}",
        options.source_vocab, options.target_vocab);
  check(options.encoder_layers > 0 && options.decoder_layers > 0,
        "Transformer: needs at least one encoder and one decoder layer, got {} and {}", options.encoder_layers,
        options.decoder_layers);
  check(!options.share_embeddings || options.source_vocab == options.target_vocab,
        "Transformer: shared embeddings need one vocabulary, got {} source and {} target words", options.source_vocab,
        options.target_vocab);
  const float embed_stddev = 1.0f / std::sqrt(static_cast<float>(d));
  register_module("target_words", target_words, std::make_shared<Embedding>(options.target_vocab, d, init_gen, embed_stddev));
  if (options.share_embeddings)
    source_words = target_words;  // one table: registered once, so it is one parameter
  else
    register_module("source_words", source_words,
                    std::make_shared<Embedding>(options.source_vocab, d, init_gen, embed_stddev));
  register_module("encoder", encoder, std::make_shared<ModuleList<TransformerEncoderLayer>>());
  for (int64_t i = 0; i < options.encoder_layers; ++i)
    encoder->push_back(std::make_shared<TransformerEncoderLayer>(options.layer, init_gen, noise_gen));
  register_module("decoder", decoder, std::make_shared<ModuleList<TransformerDecoderLayer>>());
  for (int64_t i = 0; i < options.decoder_layers; ++i)
    decoder->push_back(std::make_shared<TransformerDecoderLayer>(options.layer, init_gen, noise_gen));
  if (std::shared_ptr<Norm> norm = final_norm(options.layer)) register_module("encoder_norm", encoder_norm, norm);
  if (std::shared_ptr<Norm> norm = final_norm(options.layer)) register_module("decoder_norm", decoder_norm, norm);
  register_module("dropout", dropout, std::make_shared<Dropout>(options.layer.dropout, noise_gen));
}

Var Transformer::add_positions(const Var& x, int64_t first_position) {
  const int64_t steps = x.dim(1), d = options_.layer.model_size;
  Tensor positions = sinusoidal_positions(steps, d, first_position).reshape(Shape{1, steps, d});
  return dropout->forward(x + constant(positions));
}

Var Transformer::decoder_inputs(const Indices& previous, int64_t first_position) {
  const int64_t d = options_.layer.model_size;
  const float scale = std::sqrt(static_cast<float>(d));
  // −1 (no previous word) looks up row 0 and is then zeroed.
  Indices ids = previous;
  Tensor keep = Tensor::ones(Shape{previous.shape[0], previous.shape[1], 1});
  bool any_start = false;
  for (size_t i = 0; i < ids.values.size(); ++i)
    if (ids.values[i] < 0) ids.values[i] = 0, keep.data()[i] = 0.0f, any_start = true;
  Var words = target_words->forward(ids) * scale;
  if (any_start) words = words * constant(keep);
  return add_positions(words, first_position);
}

Var Transformer::output_logits(const Var& top) {
  Var y = decoder_norm ? decoder_norm->forward(top) : top;
  return matmul(y, target_words->weight, false, true);  // y E_tgtᵀ
}

Var Transformer::encode(const Indices& source, const Tensor& source_mask) {
  check_sentences(source, source_mask, "Transformer", "source");
  const float scale = std::sqrt(static_cast<float>(options_.layer.model_size));
  Tensor mask = batch_major(source_mask);
  Var x = add_positions(source_words->forward(batch_major(source)) * scale, 0);
  for (auto& layer : *encoder) x = layer->forward(x, mask);
  return encoder_norm ? encoder_norm->forward(x) : x;
}

Var Transformer::logits(const Indices& source, const Tensor& source_mask, const Indices& target,
                        const Tensor& target_mask) {
  check_sentences(target, target_mask, "Transformer", "target");
  check(source.shape[1] == target.shape[1], "Transformer: source batch {} and target batch {} differ",
        source.shape[1], target.shape[1]);
  const int64_t steps = target.shape[0], batch = target.shape[1], d = options_.layer.model_size;
  Var memory = encode(source, source_mask);
  Tensor memory_mask = batch_major(source_mask), mask = batch_major(target_mask);
  Var y = decoder_inputs(shifted_right(batch_major(target)), 0);
  for (auto& layer : *decoder) y = layer->forward(y, memory, mask, memory_mask);
  return output_logits(reshape(y, {batch * steps, d}));
}

namespace {

// Targets and their 0/1 weights in the logits' batch-major row order.
CrossEntropyOptions token_weights(const Tensor& target_mask, float label_smoothing, bool mean) {
  CrossEntropyOptions ce;
  ce.label_smoothing = label_smoothing;
  Tensor mask = batch_major(target_mask);
  ce.row_weights = mask.reshape(Shape{mask.numel()});
  ce.mean = mean;
  return ce;
}

}  // namespace

Var Transformer::loss(const Indices& source, const Tensor& source_mask, const Indices& target,
                      const Tensor& target_mask) {
  // Per token: the smoothed cross-entropy summed over the real tokens, divided by their number.
  Var out = logits(source, source_mask, target, target_mask);
  return cross_entropy(out, Indices(batch_major(target).values),
                       token_weights(target_mask, options_.label_smoothing, /*mean=*/true));
}

Var Transformer::token_cross_entropy(const Indices& source, const Tensor& source_mask, const Indices& target,
                                     const Tensor& target_mask) {
  Var out = logits(source, source_mask, target, target_mask);
  return cross_entropy(out, Indices(batch_major(target).values), token_weights(target_mask, 0.0f, /*mean=*/true));
}

namespace {

// Decoding with one cache per decoder layer (layers/transformer.h): position
// t costs O(t), not the O(t²) of running the decoder on the whole prefix.
class TransformerDecoding : public DecodingState {
 public:
  TransformerDecoding(Transformer& model, std::vector<DecoderLayerCache> caches)
      : model_(model), caches_(std::move(caches)) {}

  Var next(const std::vector<int32_t>& previous) override {
    const int64_t rows = static_cast<int64_t>(previous.size());
    check(rows == caches_.front().cross.keys.dim(0), "Transformer decoding: {} previous words for {} rows", rows,
          caches_.front().cross.keys.dim(0));
    Var y = model_.decoder_inputs(Indices(Shape{rows, 1}, previous), position_++);  // [R, 1, d]
    for (size_t i = 0; i < caches_.size(); ++i) y = (*model_.decoder)[i].step(y, caches_[i]);
    return log_softmax(model_.output_logits(reshape(y, {rows, y.dim(2)})), 1);
  }

  // Only the decoded positions' keys and values follow their hypotheses: the
  // source's (cross) are the same for every row of a sentence.
  void reorder(const std::vector<int32_t>& parents) override {
    for (DecoderLayerCache& cache : caches_)
      if (cache.self.length() > 0) cache.self = cache.self.select_rows(parents);
  }

 private:
  Transformer& model_;
  std::vector<DecoderLayerCache> caches_;
  int64_t position_ = 0;
};

// Decoding without a cache: the whole decoder reruns on the prefix emitted
// so far at every position, and the last position's output is kept.
class TransformerFullDecoding : public DecodingState {
 public:
  TransformerFullDecoding(Transformer& model, Var memory, Tensor memory_mask)
      : model_(model), memory_(std::move(memory)), memory_mask_(std::move(memory_mask)),
        prefixes_(static_cast<size_t>(memory_.dim(0))) {}

  Var next(const std::vector<int32_t>& previous) override {
    const int64_t rows = static_cast<int64_t>(prefixes_.size()), d = memory_.dim(2);
    check(static_cast<int64_t>(previous.size()) == rows, "Transformer decoding: {} previous words for {} rows",
          previous.size(), rows);
    for (size_t r = 0; r < prefixes_.size(); ++r) prefixes_[r].push_back(previous[r]);
    const int64_t steps = static_cast<int64_t>(prefixes_[0].size());
    std::vector<int32_t> ids;
    ids.reserve(static_cast<size_t>(rows * steps));
    for (const auto& prefix : prefixes_) ids.insert(ids.end(), prefix.begin(), prefix.end());
    Var y = model_.decoder_inputs(Indices(Shape{rows, steps}, std::move(ids)), 0);
    for (auto& layer : *model_.decoder) y = layer->forward(y, memory_, {}, memory_mask_);
    Var last = reshape(slice(y, 1, steps - 1, steps), {rows, d});
    return log_softmax(model_.output_logits(last), 1);
  }

  void reorder(const std::vector<int32_t>& parents) override {
    std::vector<std::vector<int32_t>> reordered;
    reordered.reserve(parents.size());
    for (int32_t parent : parents) reordered.push_back(prefixes_[static_cast<size_t>(parent)]);
    prefixes_ = std::move(reordered);
  }

 private:
  Transformer& model_;
  Var memory_;
  Tensor memory_mask_;
  std::vector<std::vector<int32_t>> prefixes_;  // each row's previous words, −1 first
};

}  // namespace

std::unique_ptr<DecodingState> Transformer::start_decoding(const Indices& source, const Tensor& source_mask,
                                                           int64_t copies) {
  check(copies >= 1, "Transformer::start_decoding: copies must be at least 1, got {}", copies);
  Var memory = encode(source, source_mask);
  Tensor memory_mask = batch_major(source_mask);
  const int64_t batch = memory.dim(0);
  std::vector<int32_t> repeat(static_cast<size_t>(batch * copies));
  for (int64_t r = 0; r < batch * copies; ++r) repeat[static_cast<size_t>(r)] = static_cast<int32_t>(r / copies);
  memory = index_select(memory, 0, repeat);
  memory_mask = index_select(constant(memory_mask), 0, repeat).value();
  if (!cached_decoding) return std::make_unique<TransformerFullDecoding>(*this, memory, memory_mask);
  std::vector<DecoderLayerCache> caches;
  for (auto& layer : *decoder) caches.push_back(layer->start(memory, memory_mask));
  return std::make_unique<TransformerDecoding>(*this, std::move(caches));
}

}  // namespace rg
