#pragma once
// Batches: deterministic shuffling, length-bucketed batches for sentences,
// padding, and a cursor through the epochs whose state resumes a run exactly.
//
// Shuffling is Fisher–Yates driven by rg::Generator::randint, so a seed gives
// the same order on every platform (std::shuffle's order is left to the
// standard library). An epoch is a list of batches, each a list of example
// indices, made by an EpochPlanner from the generator:
//
//   shuffled_batches(N, B)            a permutation of the N examples cut into batches of B
//   length_bucketed_batches(len, o)   shuffle; cut into buckets of o.bucket_batches batches'
//                                     worth; sort each bucket by length; cut into batches of
//                                     up to o.max_sentences sentences and o.max_tokens padded
//                                     tokens; shuffle the order of the batches
//
// BatchCursor walks through the batches, replanning at each new epoch. Its
// state is (epoch, position = batches taken in this epoch, generator state at
// the start of the epoch): restoring it replans the same epoch from the same
// generator state and continues with the same next batch, so a resumed run
// sees exactly the batches the original would have.
//
// pad_batch packs sentences (token ids) into the [T, B] layout the recurrent
// models use: ids[t, b] is token t of sentence b, 0 (<pad>) after its end, and
// mask[t, b] is 1 for a real token, 0 for padding.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/core/indices.h"
#include "rmsgrad/core/tensor.h"
#include "rmsgrad/core/random.h"

namespace rg {

// Fisher–Yates: for i = n-1 down to 1, swap item i with item randint(i + 1).
template <class T>
void shuffle(std::vector<T>& items, Generator& gen) {
  for (int64_t i = static_cast<int64_t>(items.size()) - 1; i > 0; --i)
    std::swap(items[static_cast<size_t>(i)], items[static_cast<size_t>(gen.randint(i + 1))]);
}

std::vector<int64_t> shuffled_indices(int64_t n, Generator& gen);  // a permutation of [0, n)

using Batch = std::vector<int64_t>;     // example indices
using EpochPlan = std::vector<Batch>;   // one epoch's batches, in order
using EpochPlanner = std::function<EpochPlan(Generator&)>;

// Batches of `batch_size` from a fresh permutation; the last batch of an epoch
// is smaller when batch_size does not divide N, or dropped with drop_last.
EpochPlanner shuffled_batches(int64_t num_examples, int64_t batch_size, bool drop_last = false);

struct BucketOptions {
  int64_t max_sentences = 80;  // sentences per batch
  int64_t max_tokens = 0;      // padded tokens per batch (B × longest length); 0: no limit
  int64_t bucket_batches = 20; // a bucket, sorted by length, holds this many full batches
};
// Every example is in exactly one batch per epoch; a sentence longer than
// max_tokens gets a batch of its own.
EpochPlanner length_bucketed_batches(std::vector<int64_t> lengths, BucketOptions options);

struct CursorState {
  int64_t epoch = 0;
  int64_t position = 0;        // batches already taken from this epoch
  uint64_t seed = 0;           // the generator at the start of this epoch
  uint64_t offset = 0;
  std::string to_string() const;  // a JSON object, for checkpoint metadata
  static CursorState from_string(const std::string& text);
  bool operator==(const CursorState&) const = default;
};

// What a trainer needs of a source of batches to checkpoint it and resume it
// exactly (train/trainer.h): BatchCursor and DataLoader
// (data/loader.h) are both one. Its next() is its own: what a batch is
// differs (example indices, labelled tensors).
class ResumableCursor {
 public:
  virtual ~ResumableCursor() = default;
  virtual int64_t epoch() const = 0;
  virtual int64_t batches_per_epoch() const = 0;
  virtual CursorState state() const = 0;
  // Throws rg::Error when the state does not fit this data (position past the epoch's end).
  virtual void restore(const CursorState& state) = 0;
};

class BatchCursor : public ResumableCursor {
 public:
  BatchCursor(EpochPlanner planner, uint64_t seed);

  // The next batch; after the last batch of an epoch, plans the next epoch.
  const Batch& next();
  int64_t epoch() const override { return epoch_; }
  int64_t position() const { return position_; }
  int64_t batches_per_epoch() const override { return static_cast<int64_t>(plan_.size()); }
  double epoch_progress() const;  // epoch + position / batches_per_epoch, for plots

  CursorState state() const override;
  void restore(const CursorState& state) override;

 private:
  void plan_epoch();
  EpochPlanner planner_;
  Generator gen_;
  uint64_t epoch_seed_ = 0, epoch_offset_ = 0;
  int64_t epoch_ = 0, position_ = 0;
  EpochPlan plan_;
};

struct PaddedBatch {
  Indices ids;                   // [T, B], <pad> = 0 after each sentence
  Tensor mask;                   // [T, B], 1 = real token, 0 = padding
  std::vector<int64_t> lengths;  // [B]
  int64_t time_steps() const { return ids.shape[0]; }
  int64_t batch_size() const { return ids.shape[1]; }
};
// Pads sentences[batch[0]], sentences[batch[1]], ... into [T, B] with T the longest.
PaddedBatch pad_batch(std::span<const std::vector<int32_t>> sentences, std::span<const int64_t> batch,
                      int32_t pad_id = 0);
// Columns [first, first + count) of time-major [T, B] ids or values.
Indices time_major_columns(const Indices& ids, int64_t first, int64_t count);
Tensor time_major_columns(const Tensor& values, int64_t first, int64_t count);
// Sentences [first, first + count) of a padded batch, still T long (a
// data-parallel process's share keeps the whole batch's layout).
PaddedBatch batch_columns(const PaddedBatch& batch, int64_t first, int64_t count);

}  // namespace rg
