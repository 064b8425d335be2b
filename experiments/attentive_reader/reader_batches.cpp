// Questions as ids and the attentive reader's minibatches (see reader_batches.h).
#include "rmsgrad/experiments/attentive_reader/reader_batches.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "rmsgrad/core/error.h"

namespace rg::reader {

namespace {

std::string entity_token(int64_t k) { return "@entity" + std::to_string(k); }

}  // namespace

Vocab build_vocab(const std::vector<Question>& train, const std::vector<Question>& held_out, int64_t entity_count,
                  int64_t min_count, int64_t max_size) {
  TokenCounts counts;
  for (const Question& q : train) {
    for (const std::string& t : q.document) ++counts[t];
    for (const std::string& t : q.query) ++counts[t];
  }
  // Answers, candidates and entities must have ids whatever their counts:
  // counted as "always", they sort first and survive min_count and max_size.
  const int64_t always = std::numeric_limits<int64_t>::max() / 4;
  for (const auto* set : {&train, &held_out})
    for (const Question& q : *set)
      for (const std::string& c : q.candidates) counts[c] = always;
  for (int64_t k = 0; k < entity_count; ++k) counts[entity_token(k)] = always;
  counts[kPlaceholder] = always;  // the query's slot is a token of its own
  return Vocab::from_counts(counts, min_count, max_size);
}

std::vector<EncodedQuestion> encode(const std::vector<Question>& questions, const Vocab& vocab) {
  std::vector<EncodedQuestion> out;
  out.reserve(questions.size());
  for (const Question& q : questions) {
    EncodedQuestion e;
    e.document = vocab.encode(q.document);
    e.query = vocab.encode(q.query);
    check(!e.document.empty() && !e.query.empty(), "{}: empty document or query", q.origin);
    for (const std::string& c : q.candidates) {
      check(vocab.contains(c), "{}: candidate '{}' is not in the vocabulary", q.origin, c);
      e.candidates.push_back(vocab.id(c));
    }
    const auto at = std::find(q.candidates.begin(), q.candidates.end(), q.answer);
    check(at != q.candidates.end(), "{}: answer '{}' is not among the candidates", q.origin, q.answer);
    e.answer = static_cast<int32_t>(at - q.candidates.begin());
    out.push_back(std::move(e));
  }
  return out;
}

EntityShuffler::EntityShuffler(const Vocab& vocab, int64_t entity_count) {
  for (int64_t k = 0; k < entity_count; ++k) {
    const std::string token = entity_token(k);
    check(vocab.contains(token), "EntityShuffler: {} is not in the vocabulary", token);
    entity_ids_.push_back(vocab.id(token));
  }
  remap_.resize(static_cast<size_t>(vocab.size()));
  reset();
}

void EntityShuffler::reset() { std::iota(remap_.begin(), remap_.end(), 0); }

void EntityShuffler::shuffle(Generator& gen) {
  std::vector<int32_t> renamed = entity_ids_;
  rg::shuffle(renamed, gen);
  for (size_t k = 0; k < entity_ids_.size(); ++k) remap_[static_cast<size_t>(entity_ids_[k])] = renamed[k];
}

ReaderBatch make_batch(const std::vector<EncodedQuestion>& questions, const Batch& batch,
                       const EntityShuffler& entities) {
  check(!batch.empty(), "make_batch: empty batch");
  const int64_t b_size = static_cast<int64_t>(batch.size());
  std::vector<std::vector<int32_t>> documents, queries;
  int64_t max_candidates = 0;
  for (int64_t i : batch) {
    const EncodedQuestion& q = questions.at(static_cast<size_t>(i));
    documents.push_back(q.document);
    queries.push_back(q.query);
    for (int32_t& id : documents.back()) id = entities(id);
    for (int32_t& id : queries.back()) id = entities(id);
    max_candidates = std::max<int64_t>(max_candidates, static_cast<int64_t>(q.candidates.size()));
  }
  std::vector<int64_t> all(static_cast<size_t>(b_size));
  std::iota(all.begin(), all.end(), 0);
  PaddedBatch doc = pad_batch(documents, all), query = pad_batch(queries, all);

  ReaderBatch out;
  out.document = std::move(doc.ids);
  out.document_mask = doc.mask;
  out.query = std::move(query.ids);
  out.query_mask = query.mask;
  std::vector<int32_t> candidates(static_cast<size_t>(b_size * max_candidates), Vocab::kPad), answers;
  out.candidate_padding = Tensor::full(Shape{b_size, max_candidates}, 1.0f);
  for (int64_t b = 0; b < b_size; ++b) {
    const EncodedQuestion& q = questions[static_cast<size_t>(batch[static_cast<size_t>(b)])];
    for (size_t k = 0; k < q.candidates.size(); ++k) {
      candidates[static_cast<size_t>(b * max_candidates) + k] = entities(q.candidates[k]);
      out.candidate_padding.data()[b * max_candidates + static_cast<int64_t>(k)] = 0.0f;
    }
    answers.push_back(q.answer);
  }
  out.candidates = Indices(Shape{b_size, max_candidates}, std::move(candidates));
  out.answers = Indices(std::move(answers));
  return out;
}

namespace {

// Columns [first, first + count) of a time-major [T, B] matrix (ids or mask),
// or rows [first, first + count) of a batch-major [B, ...] one: both are
// `count` runs of `run` elements, `stride` apart.
template <class T>
std::vector<T> take_runs(const T* data, int64_t runs, int64_t stride, int64_t offset, int64_t run) {
  std::vector<T> out;
  out.reserve(static_cast<size_t>(runs * run));
  for (int64_t r = 0; r < runs; ++r) out.insert(out.end(), data + r * stride + offset, data + r * stride + offset + run);
  return out;
}

Indices time_major_columns(const Indices& ids, int64_t first, int64_t count) {
  const int64_t T = ids.shape[0], B = ids.shape[1];
  return Indices(Shape{T, count}, take_runs(ids.values.data(), T, B, first, count));
}

Tensor time_major_columns(const Tensor& mask, int64_t first, int64_t count) {
  const int64_t T = mask.dim(0), B = mask.dim(1);
  return Tensor::from(Shape{T, count}, take_runs(mask.data(), T, B, first, count));
}

}  // namespace

ReaderBatch batch_rows(const ReaderBatch& batch, int64_t first, int64_t count) {
  const int64_t B = batch.size();
  check(first >= 0 && count >= 1 && first + count <= B, "batch_rows: questions [{}, {}) of a batch of {}", first,
        first + count, B);
  const int64_t C = batch.candidates.shape[1];
  ReaderBatch out;
  out.document = time_major_columns(batch.document, first, count);
  out.document_mask = time_major_columns(batch.document_mask, first, count);
  out.query = time_major_columns(batch.query, first, count);
  out.query_mask = time_major_columns(batch.query_mask, first, count);
  out.candidates = Indices(Shape{count, C}, take_runs(batch.candidates.values.data(), 1, 0, first * C, count * C));
  out.candidate_padding =
      Tensor::from(Shape{count, C}, take_runs(batch.candidate_padding.data(), 1, 0, first * C, count * C));
  out.answers = Indices(Shape{count}, take_runs(batch.answers.values.data(), 1, 0, first, count));
  return out;
}

EpochPlanner reader_batches(const std::vector<EncodedQuestion>& questions, int64_t batch_size) {
  check(batch_size > 0, "reader_batches: batch size must be positive, got {}", batch_size);
  std::vector<int64_t> lengths;
  for (const EncodedQuestion& q : questions) lengths.push_back(static_cast<int64_t>(q.document.size()));
  BucketOptions options;
  options.max_sentences = batch_size;
  return length_bucketed_batches(std::move(lengths), options);
}

}  // namespace rg::reader
