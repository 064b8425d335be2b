#pragma once
// A labelled dataset held in memory, and a loader that deals it out in
// shuffled batches, epoch after epoch.
//
//   rg::LabelledTensors train = rg::read_mnist(images, labels);   // [60000, 784], 60000 labels
//   rg::DataLoader loader(train, 128, {.seed = 1});
//   for (int64_t step = 0; step < steps; ++step) {
//     rg::LabelledBatch batch = loader.next();                   // [128, 784] and 128 labels
//     Var loss = cross_entropy(model.forward(constant(batch.inputs)), batch.labels);
//     ...
//   }
//
// The order is a seeded shuffle per epoch (data/batching.h's BatchCursor), so
// the same seed gives the same batches, and state() / restore() resume the
// order exactly mid-epoch (save the state with optim/save_load.h's training
// state, or let a Trainer keep the loader: train/trainer.h).
// With shuffle off the batches follow the rows in order, which is what
// evaluation wants; for_each_batch does one such pass.
//
// A dataset without labels (images for an autoencoder, a text's windows)
// is the same with no labels at all, and its batches have none:
//
//   rg::DataLoader loader(images, 64, {.seed = 1});              // images [N, 3, 32, 32]
//   Tensor x = loader.next().inputs;                             // [64, 3, 32, 32]
//
// Sequences of different lengths (sentences) are batched with the same
// BatchCursor and padded with pad_batch (data/batching.h).
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "rmsgrad/core/indices.h"
#include "rmsgrad/core/tensor.h"
#include "rmsgrad/data/batching.h"

namespace rg {

struct LabelledTensors {
  Tensor inputs;                // [N, ...]: example i is row i
  std::vector<int32_t> labels;  // [N]: the class of example i

  // The number of examples: rows of `inputs` (check_dataset in every user
  // makes sure there are as many labels).
  int64_t size() const { return inputs.defined() && inputs.rank() >= 1 ? inputs.shape()[0] : 0; }
  // Examples [begin, end) as a new dataset (copies them): for a validation split.
  LabelledTensors rows(int64_t begin, int64_t end) const;
};

struct LabelledBatch {
  Tensor inputs;   // [B, ...]
  Indices labels;  // [B]; empty for a dataset without labels
  int64_t size() const { return inputs.defined() && inputs.rank() >= 1 ? inputs.shape()[0] : 0; }
};

// The examples picked by `rows`, in that order.
LabelledBatch gather(const LabelledTensors& data, std::span<const int64_t> rows);

struct LoaderOptions {
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;  // drop an epoch's last, smaller batch
};

class DataLoader : public ResumableCursor {
 public:
  // The loader holds the examples: the inputs by their tensor handle (shared
  // storage, not copied, as torch's TensorDataset) and the labels as a copy,
  // so `data` may be a temporary.
  DataLoader(LabelledTensors data, int64_t batch_size, LoaderOptions options = {});
  // A dataset without labels: example i is row i of `inputs` [N, ...].
  DataLoader(Tensor inputs, int64_t batch_size, LoaderOptions options = {})
      : DataLoader(LabelledTensors{std::move(inputs), {}}, batch_size, options) {}

  // The next batch; after an epoch's last batch the next epoch begins.
  LabelledBatch next();

  int64_t epoch() const override { return cursor_.epoch(); }
  int64_t batches_per_epoch() const override { return cursor_.batches_per_epoch(); }
  CursorState state() const override { return cursor_.state(); }
  void restore(const CursorState& state) override { cursor_.restore(state); }

 private:
  LabelledTensors data_;  // before cursor_, which is planned from it
  BatchCursor cursor_;
};

// Calls visit(batch) for the examples in order, `batch_size` at a time (the
// last batch may be smaller).
void for_each_batch(const LabelledTensors& data, int64_t batch_size,
                    const std::function<void(const LabelledBatch&)>& visit);

// The index of the largest value of each row of scores [B, C] (the first one
// on ties).
std::vector<int32_t> argmax_rows(const Tensor& scores);
// The fraction of rows of scores [B, C] whose largest value is at the label.
double accuracy(const Tensor& scores, const Indices& labels);

}  // namespace rg
