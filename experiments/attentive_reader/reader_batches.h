#pragma once
// Questions as token ids, and minibatches for the attentive reader.
//
// The vocabulary holds the training questions' document and query tokens
// seen at least min_count times (the most frequent first, at most max_size
// in all), every candidate (answers included) of every question, and the
// entity tokens @entity0 … @entity{E−1}, so that any renaming of the
// entities stays inside it.
//
// A batch packs B questions time-major, as the recurrent layers want them:
//   document   [Td, B] ids and mask (1 = real token)
//   query      [Tq, B] ids and mask
//   candidates [B, K]  ids, K the most candidates in the batch; the padding
//                      slots have candidate_padding 1 (and id <pad>)
//   answers    [B]     the answer's position among its question's candidates
//
// Entity shuffling (Hermann et al. 2015): with a permutation π of the E
// entity ids, every @entityK in a batch's document, query and candidates is
// read as @entity{π(K)} — consistently within the batch — so an id carries
// no meaning across batches and the answer must be found in the document.
// Training draws a fresh π for every batch; evaluation uses the identity.
#include <cstdint>
#include <vector>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/core/tensor.h"
#include "rmsgrad/experiments/attentive_reader/reading_data.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/experiments/common/vocab.h"

namespace rg::reader {

struct EncodedQuestion {
  std::vector<int32_t> document, query, candidates;
  int32_t answer = 0;  // index into candidates
};

// `held_out` (validation and test questions) adds only its candidates: they
// need output vectors, even if untrained ones, to be scored at all.
Vocab build_vocab(const std::vector<Question>& train, const std::vector<Question>& held_out, int64_t entity_count,
                  int64_t min_count = 1, int64_t max_size = 0);

// Tokens outside the vocabulary become <unk>; a candidate outside it is an
// error naming the question (it could never be predicted).
std::vector<EncodedQuestion> encode(const std::vector<Question>& questions, const Vocab& vocab);

struct ReaderBatch {
  Indices document, query, candidates, answers;
  Tensor document_mask, query_mask, candidate_padding;
  int64_t size() const { return answers.shape[0]; }
};

// Renames entity ids inside batches. The identity until shuffle() is called.
class EntityShuffler {
 public:
  EntityShuffler(const Vocab& vocab, int64_t entity_count);
  void shuffle(Generator& gen);  // a fresh permutation of the entity ids
  void reset();                  // back to the identity
  int32_t operator()(int32_t id) const { return remap_[static_cast<size_t>(id)]; }
  int64_t entity_count() const { return static_cast<int64_t>(entity_ids_.size()); }

 private:
  std::vector<int32_t> entity_ids_;  // vocabulary id of @entityK
  std::vector<int32_t> remap_;       // vocabulary id → vocabulary id
};

ReaderBatch make_batch(const std::vector<EncodedQuestion>& questions, const Batch& batch,
                       const EntityShuffler& entities);
// Questions [first, first + count) of a batch, padded as the whole batch is
// (a data-parallel process's share, dist/batch_share.h).
ReaderBatch batch_rows(const ReaderBatch& batch, int64_t first, int64_t count);

// Batches of up to `batch_size` questions of similar document length.
EpochPlanner reader_batches(const std::vector<EncodedQuestion>& questions, int64_t batch_size);

}  // namespace rg::reader
