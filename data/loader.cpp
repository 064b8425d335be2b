#include "rmsgrad/data/loader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

// Elements per example: the product of every axis after the first.
int64_t row_size(const Tensor& inputs) { return inputs.shape()[0] == 0 ? 0 : inputs.numel() / inputs.shape()[0]; }

Shape with_rows(Shape shape, int64_t rows) {
  shape[0] = rows;
  return shape;
}

void check_dataset(const LabelledTensors& data, const char* who) {
  check(data.inputs.defined() && data.inputs.rank() >= 1, "{}: the dataset has no inputs tensor [N, ...]", who);
  check(data.labels.empty() || static_cast<int64_t>(data.labels.size()) == data.size(),
        "{}: the dataset has {} input rows but {} labels (give one per row, or none)", who, data.size(),
        data.labels.size());
}

// Batches of consecutive rows: the planner of an unshuffled loader.
EpochPlanner in_order_batches(int64_t num_examples, int64_t batch_size, bool drop_last) {
  return [=](Generator&) {
    EpochPlan plan;
    for (int64_t begin = 0; begin < num_examples; begin += batch_size) {
      const int64_t end = std::min(num_examples, begin + batch_size);
      if (drop_last && end - begin < batch_size) break;
      Batch batch(static_cast<size_t>(end - begin));
      for (int64_t i = begin; i < end; ++i) batch[static_cast<size_t>(i - begin)] = i;
      plan.push_back(std::move(batch));
    }
    return plan;
  };
}

// The loader's arguments, checked before anything is planned.
EpochPlanner checked_planner(const LabelledTensors& data, int64_t batch_size, const LoaderOptions& options) {
  check_dataset(data, "DataLoader");
  check(batch_size > 0, "DataLoader: the batch size must be positive, not {}", batch_size);
  check(data.size() > 0, "DataLoader: the dataset is empty");
  check(!options.drop_last || data.size() >= batch_size,
        "DataLoader: with drop_last, {} examples make no batch of {}", data.size(), batch_size);
  return options.shuffle ? shuffled_batches(data.size(), batch_size, options.drop_last)
                         : in_order_batches(data.size(), batch_size, options.drop_last);
}

}  // namespace

LabelledTensors LabelledTensors::rows(int64_t begin, int64_t end) const {
  check_dataset(*this, "LabelledTensors::rows");
  check(0 <= begin && begin <= end && end <= size(), "LabelledTensors::rows: [{}, {}) is not inside [0, {})", begin,
        end, size());
  std::vector<int64_t> picked(static_cast<size_t>(end - begin));
  for (int64_t i = begin; i < end; ++i) picked[static_cast<size_t>(i - begin)] = i;
  LabelledBatch batch = gather(*this, picked);
  return {batch.inputs, std::move(batch.labels.values)};
}

LabelledBatch gather(const LabelledTensors& data, std::span<const int64_t> rows) {
  check_dataset(data, "gather");
  const int64_t width = row_size(data.inputs);
  Tensor inputs = Tensor::empty(with_rows(data.inputs.shape(), static_cast<int64_t>(rows.size())));
  const bool labelled = !data.labels.empty();
  std::vector<int32_t> labels(labelled ? rows.size() : 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t row = rows[i];
    check(0 <= row && row < data.size(), "gather: row {} is outside the dataset of {} examples", row, data.size());
    std::memcpy(inputs.data() + static_cast<int64_t>(i) * width, data.inputs.data() + row * width,
                static_cast<size_t>(width) * sizeof(float));
    if (labelled) labels[i] = data.labels[static_cast<size_t>(row)];
  }
  return {inputs, Indices(std::move(labels))};
}

DataLoader::DataLoader(LabelledTensors data, int64_t batch_size, LoaderOptions options)
    : data_(std::move(data)), cursor_(checked_planner(data_, batch_size, options), options.seed) {}

LabelledBatch DataLoader::next() { return gather(data_, cursor_.next()); }

void for_each_batch(const LabelledTensors& data, int64_t batch_size,
                    const std::function<void(const LabelledBatch&)>& visit) {
  check(batch_size > 0, "for_each_batch: the batch size must be positive, not {}", batch_size);
  Generator unused;
  for (const Batch& rows : in_order_batches(data.size(), batch_size, false)(unused)) visit(gather(data, rows));
}

std::vector<int32_t> argmax_rows(const Tensor& scores) {
  check(scores.rank() == 2, "argmax_rows: scores must be [B, C], not {}", scores.shape());
  const int64_t rows = scores.shape()[0], cols = scores.shape()[1];
  check(cols > 0, "argmax_rows: scores have no columns");
  std::vector<int32_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = scores.data() + r * cols;
    out[static_cast<size_t>(r)] = static_cast<int32_t>(std::max_element(row, row + cols) - row);
  }
  return out;
}

double accuracy(const Tensor& scores, const Indices& labels) {
  const std::vector<int32_t> predicted = argmax_rows(scores);
  check(predicted.size() == labels.values.size(), "accuracy: {} rows of scores but {} labels", predicted.size(),
        labels.values.size());
  if (predicted.empty()) return 0.0;
  int64_t right = 0;
  for (size_t i = 0; i < predicted.size(); ++i) right += predicted[i] == labels.values[i];
  return static_cast<double>(right) / static_cast<double>(predicted.size());
}

}  // namespace rg
