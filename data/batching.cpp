// Shuffling, bucketed batches, the epoch cursor and padding (see batching.h).
#include "rmsgrad/data/batching.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "rmsgrad/core/error.h"

namespace rg {

std::vector<int64_t> shuffled_indices(int64_t n, Generator& gen) {
  check(n >= 0, "shuffled_indices: n is {}", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  shuffle(order, gen);
  return order;
}

EpochPlanner shuffled_batches(int64_t num_examples, int64_t batch_size, bool drop_last) {
  check(num_examples > 0, "shuffled_batches: no examples");
  check(batch_size > 0, "shuffled_batches: batch size is {}", batch_size);
  check(!drop_last || batch_size <= num_examples, "shuffled_batches: batch size {} with drop_last leaves no batch of {} examples",
        batch_size, num_examples);
  return [=](Generator& gen) {
    std::vector<int64_t> order = shuffled_indices(num_examples, gen);
    EpochPlan plan;
    for (int64_t start = 0; start < num_examples; start += batch_size) {
      int64_t end = std::min(start + batch_size, num_examples);
      if (drop_last && end - start < batch_size) break;
      plan.emplace_back(order.begin() + start, order.begin() + end);
    }
    return plan;
  };
}

EpochPlanner length_bucketed_batches(std::vector<int64_t> lengths, BucketOptions options) {
  check(!lengths.empty(), "length_bucketed_batches: no examples");
  check(options.max_sentences > 0, "length_bucketed_batches: max_sentences is {}", options.max_sentences);
  check(options.max_tokens >= 0, "length_bucketed_batches: max_tokens is {}", options.max_tokens);
  check(options.bucket_batches > 0, "length_bucketed_batches: bucket_batches is {}", options.bucket_batches);
  for (size_t i = 0; i < lengths.size(); ++i)
    check(lengths[i] >= 0, "length_bucketed_batches: example {} has length {}", i, lengths[i]);
  return [lengths = std::move(lengths), options](Generator& gen) {
    auto n = static_cast<int64_t>(lengths.size());
    std::vector<int64_t> order = shuffled_indices(n, gen);
    const int64_t bucket_size = options.bucket_batches * options.max_sentences;
    EpochPlan plan;
    for (int64_t start = 0; start < n; start += bucket_size) {
      auto first = order.begin() + start, last = order.begin() + std::min(start + bucket_size, n);
      // Stable, so equal lengths keep their shuffled order: the same on every platform.
      std::stable_sort(first, last, [&](int64_t a, int64_t b) { return lengths[a] < lengths[b]; });
      Batch batch;
      int64_t longest = 0;
      for (auto it = first; it != last; ++it) {
        int64_t grown = std::max(longest, lengths[*it]);
        bool full = static_cast<int64_t>(batch.size()) == options.max_sentences ||
                    (options.max_tokens > 0 && static_cast<int64_t>(batch.size() + 1) * grown > options.max_tokens);
        if (full && !batch.empty()) {
          plan.push_back(std::move(batch));
          batch.clear();
          grown = lengths[*it];
        }
        batch.push_back(*it);
        longest = grown;
      }
      if (!batch.empty()) plan.push_back(std::move(batch));
    }
    shuffle(plan, gen);
    return plan;
  };
}

// ---- the cursor ----

std::string CursorState::to_string() const {
  return nlohmann::json{{"epoch", epoch}, {"position", position}, {"seed", seed}, {"offset", offset}}.dump();
}

CursorState CursorState::from_string(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto field = [&](const char* name) {
    check(j.is_object() && j.contains(name) && j[name].is_number_integer(),
          "data cursor state: no whole number '{}' in '{}'", name, text);
    return j[name];
  };
  CursorState state;
  state.epoch = field("epoch").get<int64_t>();
  state.position = field("position").get<int64_t>();
  state.seed = field("seed").get<uint64_t>();
  state.offset = field("offset").get<uint64_t>();
  check(state.epoch >= 0 && state.position >= 0, "data cursor state: negative epoch or position in '{}'", text);
  return state;
}

BatchCursor::BatchCursor(EpochPlanner planner, uint64_t seed) : planner_(std::move(planner)), gen_(seed) {
  check(static_cast<bool>(planner_), "BatchCursor: no planner");
  plan_epoch();
}

void BatchCursor::plan_epoch() {
  epoch_seed_ = gen_.seed();
  epoch_offset_ = gen_.offset();
  plan_ = planner_(gen_);
  check(!plan_.empty(), "BatchCursor: the planner made an epoch with no batches");
  position_ = 0;
}

const Batch& BatchCursor::next() {
  if (position_ == batches_per_epoch()) {
    ++epoch_;
    plan_epoch();
  }
  return plan_[static_cast<size_t>(position_++)];
}

double BatchCursor::epoch_progress() const {
  return static_cast<double>(epoch_) + static_cast<double>(position_) / static_cast<double>(batches_per_epoch());
}

CursorState BatchCursor::state() const { return {epoch_, position_, epoch_seed_, epoch_offset_}; }

void BatchCursor::restore(const CursorState& state) {
  gen_.set_state(state.seed, state.offset);
  plan_epoch();
  check(state.position <= batches_per_epoch(),
        "BatchCursor::restore: position {} is past the {} batches of an epoch (were the data or batch size changed?)",
        state.position, batches_per_epoch());
  epoch_ = state.epoch;
  position_ = state.position;
}

// ---- padding ----

PaddedBatch pad_batch(std::span<const std::vector<int32_t>> sentences, std::span<const int64_t> batch, int32_t pad_id) {
  check(!batch.empty(), "pad_batch: empty batch");
  const auto B = static_cast<int64_t>(batch.size());
  PaddedBatch out;
  int64_t T = 0;
  for (int64_t index : batch) {
    check(index >= 0 && index < static_cast<int64_t>(sentences.size()), "pad_batch: example {} is outside [0, {})",
          index, sentences.size());
    out.lengths.push_back(static_cast<int64_t>(sentences[static_cast<size_t>(index)].size()));
    T = std::max(T, out.lengths.back());
  }
  std::vector<int32_t> ids(static_cast<size_t>(T * B), pad_id);
  out.mask = Tensor::zeros(Shape{T, B});
  float* mask = out.mask.data();
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<int32_t>& sentence = sentences[static_cast<size_t>(batch[static_cast<size_t>(b)])];
    for (int64_t t = 0; t < out.lengths[static_cast<size_t>(b)]; ++t) {
      ids[static_cast<size_t>(t * B + b)] = sentence[static_cast<size_t>(t)];
      mask[t * B + b] = 1.0f;
    }
  }
  out.ids = Indices(Shape{T, B}, std::move(ids));
  return out;
}

namespace {

// Row t of the result is row t of `data` [T, B] from column `first` on, `count` long.
template <class T>
std::vector<T> columns_of(const T* data, int64_t rows, int64_t width, int64_t first, int64_t count) {
  check(first >= 0 && count >= 1 && first + count <= width, "time_major_columns: columns [{}, {}) of {}", first,
        first + count, width);
  std::vector<T> out;
  out.reserve(static_cast<size_t>(rows * count));
  for (int64_t t = 0; t < rows; ++t) out.insert(out.end(), data + t * width + first, data + t * width + first + count);
  return out;
}

}  // namespace

Indices time_major_columns(const Indices& ids, int64_t first, int64_t count) {
  check(ids.shape.rank() == 2, "time_major_columns: ids must be [T, B], got {}", ids.shape);
  return Indices(Shape{ids.shape[0], count}, columns_of(ids.values.data(), ids.shape[0], ids.shape[1], first, count));
}

Tensor time_major_columns(const Tensor& values, int64_t first, int64_t count) {
  check(values.rank() == 2, "time_major_columns: values must be [T, B], got {}", values.shape());
  return Tensor::from(Shape{values.dim(0), count}, columns_of(values.data(), values.dim(0), values.dim(1), first, count));
}

PaddedBatch batch_columns(const PaddedBatch& batch, int64_t first, int64_t count) {
  PaddedBatch out;
  out.ids = time_major_columns(batch.ids, first, count);
  out.mask = time_major_columns(batch.mask, first, count);
  out.lengths.assign(batch.lengths.begin() + first, batch.lengths.begin() + first + count);
  return out;
}

}  // namespace rg
