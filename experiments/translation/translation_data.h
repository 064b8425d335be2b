#pragma once
// The translation data pipeline, from text files to padded batches:
//
//   read_parallel_text   two aligned files, plain or gzip; equal line counts and
//                        valid UTF-8 are checked, errors name the file and line
//   Subword (subword.h)  a joint SentencePiece BPE model trained on the training
//                        text of both languages; text ↔ subword ids
//   encode_pairs         ids of both sides, each ending in </s>; training pairs
//                        longer than max_length subwords (the paper: 80) on
//                        either side are dropped, as are pairs with an empty side
//   translation_batches  length-bucketed batches (data/batching.h)
//                        keyed on the longer side, so padding stays small
//   make_translation_batch  the [T, B] ids and masks of both sides
#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/data/batching.h"
#include "rmsgrad/experiments/translation/subword.h"

namespace rg {

struct ParallelText {
  std::vector<std::string> source, target;  // sentence i of one is the translation of sentence i of the other
  size_t size() const { return source.size(); }
};

ParallelText read_parallel_text(const std::string& source_path, const std::string& target_path);

struct EncodedPairs {
  std::vector<std::vector<int32_t>> source, target;  // subword ids, each sentence ending in </s>
  std::vector<int64_t> line;                         // the 0-based line each pair came from
  int64_t dropped_long = 0, dropped_empty = 0;
  size_t size() const { return source.size(); }
};

// max_length 0 keeps every pair (evaluation sets are never filtered: every
// reference line is scored). A pair with an empty side is dropped whatever
// max_length is, because it has nothing to translate or nothing to learn.
EncodedPairs encode_pairs(const ParallelText& text, const Subword& subword, int64_t max_length);

// Source sentences alone (for translating a file): ids ending in </s>; an
// empty line becomes </s> alone.
std::vector<std::vector<int32_t>> encode_sentences(const std::vector<std::string>& sentences,
                                                   const Subword& subword);

EpochPlanner translation_batches(const EncodedPairs& pairs, const BucketOptions& options);

struct TranslationBatch {
  PaddedBatch source, target;  // [S, B] and [T, B]
};
TranslationBatch make_translation_batch(const EncodedPairs& pairs, const Batch& batch);

}  // namespace rg
