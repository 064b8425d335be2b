// The data-parallel layer on its own, under `mpirun -np 2` (tests/CMakeLists.txt):
// the process group's collectives, the batch shares, and the gradient
// reducer on buckets of uneven size, on a parameter that no process used and
// on one that only some processes used.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "rmsgrad/dist/batch_share.h"
#include "rmsgrad/dist/gradient_reducer.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;
using namespace rg::dist;

namespace {

ProcessGroup& group() { return ProcessGroup::world(); }

// Five parameters of 15, 7, 100, 4 and 1 floats.
struct Params {
  Generator gen{3};
  NamedParameters named;
  Params() {
    for (auto [name, shape] : std::vector<std::pair<std::string, Shape>>{
             {"a", Shape{3, 5}}, {"b", Shape{7}}, {"c", Shape{100}}, {"unused", Shape{2, 2}}, {"e", Shape{1}}})
      named.emplace_back(name, Var(normal(shape, 0.0f, 1.0f, gen), true));
  }
  Var& operator[](size_t i) { return named[i].second; }
};

std::vector<std::vector<std::string>> names(const GradientReducer& reducer) {
  std::vector<std::vector<std::string>> out;
  for (const auto& bucket : reducer.buckets()) out.push_back(bucket.names);
  return out;
}

}  // namespace

TEST_CASE("the job has two processes, and its collectives") {
  REQUIRE(group().size() == 2);  // run by mpirun -np 2
  const int r = group().rank();
  CHECK(group().sum(static_cast<double>(r + 1)) == 3.0);
  std::vector<float> values = {1.0f * r, 2.0f, -1.0f};
  group().sum(values);
  CHECK(values == std::vector<float>{1.0f, 4.0f, -2.0f});
  CHECK(group().broadcast(r == 0 ? std::string("from rank 0") : std::string("other")) == "from rank 0");
  std::vector<float> mine = {static_cast<float>(r), 7.0f};
  group().broadcast(mine);
  CHECK(mine == std::vector<float>{0.0f, 7.0f});
  CHECK(group().all_gather(std::string(static_cast<size_t>(r + 1), 'x')) == std::vector<std::string>{"x", "xx"});
}

TEST_CASE("batch shares cover the batch once, one more row for the first ranks") {
  const BatchShare share = batch_share(group(), 7);
  CHECK(share.rows == (group().rank() == 0 ? 4 : 3));
  CHECK(share.first == (group().rank() == 0 ? 0 : 4));
  CHECK(group().sum(static_cast<double>(share.rows)) == 7.0);
  CHECK(group().sum(static_cast<double>(share.weight())) == doctest::Approx(1.0).epsilon(1e-7));
  CHECK_THROWS_AS(batch_share(group(), 1), Error);
}

TEST_CASE("a shard draws each row's dropout mask as one process would for the whole batch") {
  // Rows [first, first + rows) of a global [T=3, B=7, E=5] time-major tensor.
  const BatchShare share = batch_share(group(), 7);
  Generator whole_gen(11), shard_gen(11);
  const Tensor whole = dropout_mask(Shape{3, 7, 5}, 0.5f, whole_gen, 1);
  Tensor mine;
  {
    ScopedBatchShard shard = share.shard();
    mine = dropout_mask(Shape{3, share.rows, 5}, 0.5f, shard_gen, 1);
  }
  CHECK(shard_gen.offset() == whole_gen.offset());  // the generator moves as far as the whole batch's
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t b = 0; b < share.rows; ++b)
      for (int64_t e = 0; e < 5; ++e) CHECK(mine.at({t, b, e}) == whole.at({t, share.first + b, e}));
}

TEST_CASE("the reducer packs parameters into buckets in reverse order, a large one alone") {
  Params p;
  // 40-byte buckets: e (4) + unused (16) = 20, then c (400 bytes) alone, then b (28), then a (60) alone.
  GradientReducer reducer(group(), p.named, 40);
  CHECK(names(reducer) == std::vector<std::vector<std::string>>{{"e", "unused"}, {"c"}, {"b"}, {"a"}});
}

TEST_CASE("the reducer sums every gradient over the processes, unused parameters included") {
  Params p;
  GradientReducer reducer(group(), p.named, 40);
  const int r = group().rank();
  const float k = static_cast<float>(r + 1);
  for (int step = 0; step < 2; ++step) {  // twice: the buckets start again each step
    for (auto& [name, v] : p.named) v.zero_grad();
    // Rank r: (r + 1) · Σ x² over a, b and e; c only on rank 0; "unused" on none.
    // (One op per statement, so that the recording order is a, b, e, c.)
    Var loss = sum(p[0] * p[0]);
    loss = loss + sum(p[1] * p[1]);
    loss = loss + sum(p[4] * p[4]);
    loss = k * loss;
    if (r == 0) loss = loss + sum(p[2] * p[2]);
    reducer.backward(loss);
    // d/dx of Σ_r (r + 1) x² = 2 x (1 + 2) = 6 x; c: rank 0's alone, 2 x.
    for (size_t i : {size_t{0}, size_t{1}, size_t{4}, size_t{2}}) {
      const float factor = i == 2 ? 2.0f : 6.0f;
      const Tensor& x = p[i].value();
      const Tensor& g = p[i].grad();
      for (int64_t j = 0; j < x.numel(); ++j) REQUIRE(g.data()[j] == doctest::Approx(factor * x.data()[j]).epsilon(1e-6));
    }
    REQUIRE(p[3].has_grad());
    for (float g : p[3].grad().span()) CHECK(g == 0.0f);
    if (step == 0) {
      // Buckets start in order and the first holds "unused", which backward
      // never reports: every sum starts after backward.
      CHECK(reducer.buckets_started_in_backward() == 0);
      // Rebuilt in the order rank 0's gradients became final (c, whose ops
      // were recorded last, then e, b, a), the never-ready "unused" last.
      CHECK(names(reducer) == std::vector<std::vector<std::string>>{{"c"}, {"e", "b"}, {"a"}, {"unused"}});
    } else {
      // Rank 0 now starts all but the last inside backward; rank 1, which
      // never uses c, still waits for the first bucket until backward ends.
      CHECK(reducer.buckets_started_in_backward() == (r == 0 ? 3 : 0));
    }
  }
}

TEST_CASE("the first bucket holds about 1 MiB, so that the first sum starts early") {
  // Four parameters of 0.5 MiB: the first bucket takes two, the next (4 MiB) the other two.
  std::vector<Var> big;
  NamedParameters named;
  for (int i = 0; i < 4; ++i) {
    big.push_back(Var(Tensor::ones(Shape{128 * 1024}), true));
    named.emplace_back("p" + std::to_string(i), big.back());
  }
  GradientReducer reducer(group(), named);
  const auto buckets = reducer.buckets();
  REQUIRE(buckets.size() == 2);
  CHECK(buckets[0].values == 256 * 1024);
  CHECK(buckets[1].values == 256 * 1024);
  CHECK(names(reducer) == std::vector<std::vector<std::string>>{{"p3", "p2"}, {"p1", "p0"}});
}

TEST_CASE("when every parameter is used, each bucket's sum starts inside backward") {
  Params p;
  GradientReducer reducer(group(), p.named, 40);
  Var loss = sum(p[0] * p[0]);
  for (size_t i = 1; i < 5; ++i) loss = loss + sum(p[i] * p[i]);
  reducer.backward(loss);
  CHECK(reducer.buckets_started_in_backward() == 4);
  for (size_t i = 0; i < 5; ++i) {
    const Tensor& x = p[i].value();
    for (int64_t j = 0; j < x.numel(); ++j) REQUIRE(p[i].grad().data()[j] == doctest::Approx(4.0f * x.data()[j]));
  }
}

TEST_CASE("every process ends a step with the same gradients") {
  Params p;
  GradientReducer reducer(group(), p.named);  // the default 1 MiB first bucket holds them all
  CHECK(names(reducer).size() == 1);
  const float k = static_cast<float>(group().rank() + 1);
  reducer.backward(k * sum(p[2] * p[2] * p[2]));
  // Identical on both ranks, so their sum is exactly twice each.
  std::vector<float> mine(p[2].grad().span().begin(), p[2].grad().span().end()), summed = mine;
  group().sum(summed);
  for (size_t j = 0; j < mine.size(); ++j) CHECK(summed[j] == 2.0f * mine[j]);
}

TEST_CASE("after the first step, an embedding's gradient gathers its non-zero rows instead of summing") {
  // A [512, 64] table (128 KiB): rank 0 looks up rows 1, 5, 5; rank 1 rows 5, 300.
  Generator gen(5);
  NamedParameters named{{"table", Var(normal(Shape{512, 64}, 0.0f, 1.0f, gen), true)},
                        {"dense", Var(normal(Shape{64}, 0.0f, 1.0f, gen), true)},
                        {"silent", Var(normal(Shape{512, 64}, 0.0f, 1.0f, gen), true)}};
  Var& table = named[0].second;
  Var& dense = named[1].second;
  Var& silent = named[2].second;
  GradientReducer reducer(group(), named);
  for (const auto& bucket : reducer.buckets()) CHECK_FALSE(bucket.gathers_rows);  // the first step sums
  const int r = group().rank();
  const Indices ids(r == 0 ? std::vector<int32_t>{1, 5, 5} : std::vector<int32_t>{5, 300});
  const float k = static_cast<float>(r + 1);
  for (int step = 0; step < 2; ++step) {
    for (auto& [name, v] : named) v.zero_grad();
    // Rank r: (r + 1) · Σ over its rows of row · dense, and 0 · the silent table's.
    reducer.backward(k * sum(embedding(table, ids) * dense) + 0.0f * sum(embedding(silent, ids)));
    const auto buckets = reducer.buckets();
    // The first step sums, and finds 2 rows of 512 non-zero on rank 0: from the second on, the table gathers.
    const auto gathered = std::find_if(buckets.begin(), buckets.end(), [](const auto& b) { return b.gathers_rows; });
    REQUIRE(gathered != buckets.end());
    CHECK(gathered->names == std::vector<std::string>{"table"});
    // "silent" got a gradient of zeros on rank 0's first step: that says nothing of later steps, and it sums.
    CHECK(std::count_if(buckets.begin(), buckets.end(), [](const auto& b) { return b.gathers_rows; }) == 1);
    if (step == 1) {
      // Two non-zero rows on each process, each a 4-byte index and 64 floats.
      CHECK(gathered->bytes_sent == 2 * (4 + 64 * 4));
    }
    // d table[row] = Σ_r (r + 1) · uses of row on rank r · dense: row 1 once on rank 0,
    // row 5 twice on rank 0 and once on rank 1 (1·2 + 2·1 = 4), row 300 once on rank 1 (2).
    const Tensor& g = table.grad();
    for (int64_t row = 0; row < 512; ++row) {
      const float uses = row == 1 ? 1.0f : row == 5 ? 4.0f : row == 300 ? 2.0f : 0.0f;
      for (int64_t j = 0; j < 64; ++j) REQUIRE(g.at({row, j}) == uses * dense.value().data()[j]);
    }
    // Both processes end with the same bits.
    const auto bits = group().all_gather(std::string(reinterpret_cast<const char*>(g.data()), 4 * g.numel()));
    CHECK(bits[0] == bits[1]);
  }
}
