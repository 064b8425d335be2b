// Batching for the drivers (data/batching.h): deterministic shuffling, the
// resumable cursor, length buckets and padding.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "rmsgrad/data/batching.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

TEST_CASE("shuffle: Fisher-Yates from the seed, the same order every time") {
  Generator a(42), b(42), c(43);
  std::vector<int64_t> first = shuffled_indices(1000, a), second = shuffled_indices(1000, b);
  CHECK(first == second);
  CHECK(first != shuffled_indices(1000, c));
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) CHECK(sorted[static_cast<size_t>(i)] == i);
  // Pinned, so that a change to the generator or the shuffle, which would
  // change the data order of every experiment, is noticed.
  Generator pinned(0);
  CHECK(shuffled_indices(10, pinned) == std::vector<int64_t>{6, 3, 2, 9, 8, 1, 4, 7, 0, 5});
  CHECK(pinned.offset() == 9);  // one draw per swap
}

TEST_CASE("cursor: every example once per epoch, and a restored cursor continues identically") {
  BatchCursor cursor(shuffled_batches(10, 4), 7);
  CHECK(cursor.batches_per_epoch() == 3);  // 4 + 4 + 2
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::multiset<int64_t> seen;
    for (int i = 0; i < 3; ++i)
      for (int64_t index : cursor.next()) seen.insert(index);
    CHECK(seen.size() == 10);
    CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == 10);
    CHECK(cursor.epoch() == epoch);
  }
  CHECK(BatchCursor(shuffled_batches(10, 4, true), 7).batches_per_epoch() == 2);

  // Save mid-epoch (and at an epoch's end), restore into a fresh cursor, compare.
  for (int taken : {5, 6, 0}) {
    CAPTURE(taken);
    BatchCursor original(length_bucketed_batches({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}, {2, 0, 2}), 99);
    for (int i = 0; i < taken; ++i) original.next();
    std::string saved = original.state().to_string();
    BatchCursor restored(length_bucketed_batches({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}, {2, 0, 2}), 12345);
    restored.restore(CursorState::from_string(saved));
    CHECK(restored.state() == original.state());
    for (int i = 0; i < 20; ++i) CHECK(restored.next() == original.next());
    CHECK(restored.epoch() == original.epoch());
  }
  BatchCursor small(shuffled_batches(4, 2), 1);
  CHECK_THROWS_WITH_AS(small.restore({0, 5, 1, 0}), doctest::Contains("past the 2 batches"), Error);
  CHECK_THROWS_AS(CursorState::from_string("{\"epoch\": 1}"), Error);
}

TEST_CASE("buckets: every sentence once, similar lengths together, size and token limits") {
  Generator gen(5);
  std::vector<int64_t> lengths;
  for (int i = 0; i < 1000; ++i) lengths.push_back(1 + gen.randint(50));
  BucketOptions options;
  options.max_sentences = 16;
  options.max_tokens = 400;
  options.bucket_batches = 10;
  EpochPlanner planner = length_bucketed_batches(lengths, options);
  Generator epoch_gen(1);
  EpochPlan plan = planner(epoch_gen);
  std::vector<int> count(1000, 0);
  int64_t padded = 0, real = 0;
  for (const Batch& batch : plan) {
    REQUIRE(!batch.empty());
    CHECK(static_cast<int64_t>(batch.size()) <= options.max_sentences);
    int64_t longest = 0;
    for (int64_t i : batch) {
      ++count[static_cast<size_t>(i)];
      longest = std::max(longest, lengths[static_cast<size_t>(i)]);
      real += lengths[static_cast<size_t>(i)];
    }
    CHECK(static_cast<int64_t>(batch.size()) * longest <= options.max_tokens);
    padded += static_cast<int64_t>(batch.size()) * longest;
  }
  for (int c : count) CHECK(c == 1);
  CHECK(static_cast<double>(real) / static_cast<double>(padded) > 0.9);  // little padding
  // A sentence longer than max_tokens gets a batch of its own.
  Generator g2(0);
  EpochPlan alone = length_bucketed_batches({3, 500, 3}, {8, 100, 4})(g2);
  CHECK(alone.size() == 2);
}

TEST_CASE("pad_batch: [T, B] ids padded with 0 and a 1/0 mask") {
  std::vector<std::vector<int32_t>> sentences = {{5, 6, 7}, {8}, {9, 10}};
  std::vector<int64_t> batch = {2, 0, 1};
  PaddedBatch padded = pad_batch(sentences, batch);
  CHECK(padded.ids.shape == Shape{3, 3});
  CHECK(padded.mask.shape() == Shape{3, 3});
  CHECK(padded.lengths == std::vector<int64_t>{2, 3, 1});
  // Row t holds token t of every sentence.
  CHECK(padded.ids.values == std::vector<int32_t>{9, 5, 8, 10, 6, 0, 0, 7, 0});
  CHECK(padded.mask.to_vector() == std::vector<float>{1, 1, 1, 1, 1, 0, 0, 1, 0});
  CHECK(padded.time_steps() == 3);
  CHECK(padded.batch_size() == 3);
  std::vector<int64_t> outside = {3};
  CHECK_THROWS_AS(pad_batch(sentences, outside), Error);
}
