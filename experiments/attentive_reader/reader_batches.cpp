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
  // Batch-major [B, C] and [B]: the rows are one contiguous run.
  const auto& ids = batch.candidates.values;
  out.candidates =
      Indices(Shape{count, C}, std::vector<int32_t>(ids.begin() + first * C, ids.begin() + (first + count) * C));
  out.candidate_padding = Tensor::from(Shape{count, C}, std::span<const float>(batch.candidate_padding.data() + first * C,
                                                                               static_cast<size_t>(count * C)));
  out.answers = Indices(Shape{count}, std::vector<int32_t>(batch.answers.values.begin() + first,
                                                           batch.answers.values.begin() + first + count));
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
