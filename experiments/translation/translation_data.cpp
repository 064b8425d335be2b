#include "rmsgrad/experiments/translation/translation_data.h"

#include <algorithm>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/text_file.h"

namespace rg {

ParallelText read_parallel_text(const std::string& source_path, const std::string& target_path) {
  auto [source, target] = read_parallel(source_path, target_path);
  return {std::move(source), std::move(target)};
}

namespace {

std::vector<int32_t> with_end(std::vector<int> ids) {
  std::vector<int32_t> out(ids.begin(), ids.end());
  out.push_back(kEosId);
  return out;
}

}  // namespace

EncodedPairs encode_pairs(const ParallelText& text, const Subword& subword, int64_t max_length) {
  check(text.source.size() == text.target.size(), "encode_pairs: {} source and {} target sentences",
        text.source.size(), text.target.size());
  EncodedPairs pairs;
  for (size_t i = 0; i < text.size(); ++i) {
    std::vector<int> source = subword.encode(text.source[i]), target = subword.encode(text.target[i]);
    if (source.empty() || target.empty()) {
      ++pairs.dropped_empty;
      continue;
    }
    if (max_length > 0 && (static_cast<int64_t>(source.size()) > max_length ||
                           static_cast<int64_t>(target.size()) > max_length)) {
      ++pairs.dropped_long;
      continue;
    }
    pairs.source.push_back(with_end(std::move(source)));
    pairs.target.push_back(with_end(std::move(target)));
    pairs.line.push_back(static_cast<int64_t>(i));
  }
  return pairs;
}

std::vector<std::vector<int32_t>> encode_sentences(const std::vector<std::string>& sentences,
                                                   const Subword& subword) {
  std::vector<std::vector<int32_t>> out;
  out.reserve(sentences.size());
  for (const std::string& s : sentences) out.push_back(with_end(subword.encode(s)));
  return out;
}

EpochPlanner translation_batches(const EncodedPairs& pairs, const BucketOptions& options) {
  check(pairs.size() > 0, "translation_batches: no sentence pairs");
  std::vector<int64_t> lengths(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i)
    lengths[i] = static_cast<int64_t>(std::max(pairs.source[i].size(), pairs.target[i].size()));
  return length_bucketed_batches(std::move(lengths), options);
}

TranslationBatch make_translation_batch(const EncodedPairs& pairs, const Batch& batch) {
  return {pad_batch(pairs.source, batch, kPadId), pad_batch(pairs.target, batch, kPadId)};
}

}  // namespace rg
