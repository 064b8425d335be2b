// Tensor core: factories, views, printing, errors, and the random generator.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "rmsgrad/core/allocator.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

TEST_CASE("factories fill as named") {
  CHECK(Tensor::zeros(Shape{2, 3}).to_vector() == std::vector<float>(6, 0.0f));
  CHECK(Tensor::ones(Shape{4}).to_vector() == std::vector<float>(4, 1.0f));
  CHECK(Tensor::full(Shape{2, 2}, 2.5f).to_vector() == std::vector<float>(4, 2.5f));
  CHECK(Tensor::arange(4).to_vector() == std::vector<float>{0, 1, 2, 3});
  Tensor t = Tensor::from(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(t.at({1, 2}) == 6.0f);
  CHECK(t.at({0, 1}) == 2.0f);
  CHECK(Tensor::scalar(3.0f).item() == 3.0f);
  CHECK(Tensor::scalar(3.0f).rank() == 0);
}

TEST_CASE("rank up to six, zero-sized axes") {
  Tensor t = Tensor::zeros(Shape{1, 2, 1, 3, 1, 2});
  CHECK(t.numel() == 12);
  CHECK(t.rank() == 6);
  CHECK_THROWS_AS(Shape({1, 1, 1, 1, 1, 1, 1}), Error);
  Tensor empty = Tensor::zeros(Shape{0, 3});
  CHECK(empty.numel() == 0);
  CHECK(empty.str() == "tensor([], shape=[0, 3])");
}

TEST_CASE("copies share storage, clone does not, reshape is a view") {
  Tensor a = Tensor::arange(6);
  Tensor b = a;
  Tensor c = a.clone();
  Tensor v = a.reshape(Shape{2, 3});
  a.data()[0] = 42.0f;
  CHECK(b.data()[0] == 42.0f);
  CHECK(v.at({0, 0}) == 42.0f);
  CHECK(c.data()[0] == 0.0f);
  CHECK(v.shares_storage_with(a));
  CHECK_THROWS_AS(a.reshape(Shape{4, 2}), Error);
}

TEST_CASE("storage is 64-byte aligned") {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t = Tensor::empty(Shape{n});
    CHECK(reinterpret_cast<uintptr_t>(t.data()) % 64 == 0);
  }
}

TEST_CASE("printing elides long axes") {
  Tensor t = Tensor::from(Shape{2, 2}, {1, 2, 3, 4.5f});
  CHECK(t.str() == "tensor([[1, 2], [3, 4.5]], shape=[2, 2])");
  CHECK(Tensor::arange(10).str(4) == "tensor([0, 1, ..., 8, 9], shape=[10])");
  CHECK(Tensor::scalar(2.0f).str() == "tensor(2, shape=[])");
}

TEST_CASE("errors name the op and the shapes") {
  Tensor t = Tensor::zeros(Shape{2, 3});
  try {
    (void)t.at({2, 0});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("[2, 3]") != std::string::npos);
  }
  try {
    broadcast_shapes(Shape{2, 3}, Shape{4}, "add");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "add: shapes [2, 3] and [4] cannot be broadcast");
  }
  CHECK_THROWS_AS(Tensor::from(Shape{2}, {1, 2, 3}), Error);
}

TEST_CASE("broadcast shapes follow NumPy") {
  CHECK(broadcast_shapes(Shape{4, 1, 3}, Shape{5, 1}, "t") == Shape{4, 5, 3});
  CHECK(broadcast_shapes(Shape{}, Shape{2, 2}, "t") == Shape{2, 2});
}

TEST_CASE("generator: splitmix64 reference values") {
  // The first outputs of Vigna's splitmix64 from state 0, as published.
  Generator g(0);
  CHECK(g.next_u64() == 0xE220A8397B1DCDAFull);
  CHECK(g.next_u64() == 0x6E789E6AA1B965F4ull);
  CHECK(g.next_u64() == 0x06C45D188009454Full);
  CHECK(g.offset() == 3);
}

TEST_CASE("generator: same numbers for every thread count") {
  auto draw = [](int threads) {
    set_num_threads(threads);
    Generator g(7);
    Tensor u = uniform(Shape{100000}, -1.0f, 1.0f, g);
    Tensor n = normal(Shape{50000}, 0.0f, 1.0f, g);
    return std::make_pair(u.to_vector(), n.to_vector());
  };
  auto one = draw(1);
  auto two = draw(2);
  set_num_threads(2);
  CHECK(one.first == two.first);
  CHECK(one.second == two.second);
  // A serial scalar draw gives the same stream as the parallel fill.
  Generator g(7);
  CHECK(g.uniform(-1.0f, 1.0f) == one.first[0]);
}

TEST_CASE("generator: distributions have the right moments") {
  Generator g(3);
  const int64_t n = 200000;
  Tensor u = uniform(Shape{n}, 0.0f, 1.0f, g);
  Tensor z = normal(Shape{n}, 2.0f, 3.0f, g);
  double su = 0, sz = 0, szz = 0;
  float lo = 1, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    su += u.data()[i];
    lo = std::min(lo, u.data()[i]);
    hi = std::max(hi, u.data()[i]);
    sz += z.data()[i];
    szz += double(z.data()[i]) * z.data()[i];
  }
  // Standard errors: uniform mean 1/sqrt(12 n) ≈ 6.5e-4; normal mean 3/sqrt(n) ≈ 6.7e-3.
  CHECK(std::fabs(su / n - 0.5) < 4e-3);
  CHECK(lo >= 0.0f);
  CHECK(hi < 1.0f);
  double mean = sz / n, var = szz / n - mean * mean;
  CHECK(std::fabs(mean - 2.0) < 0.04);
  CHECK(std::fabs(std::sqrt(var) - 3.0) < 0.04);
}

TEST_CASE("generator: randint is in range and state can be restored") {
  Generator g(11);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 7000; ++i) {
    int64_t r = g.randint(7);
    REQUIRE((r >= 0 && r < 7));
    ++counts[r];
  }
  for (int c : counts) CHECK(std::abs(c - 1000) < 150);  // ~5 standard deviations
  Generator a(5);
  a.uniform();
  Generator b;
  b.set_state(a.seed(), a.offset());
  CHECK(a.uniform() == b.uniform());
}

TEST_CASE("dropout mask keeps 1-p of the elements, scaled") {
  Generator g(1);
  Tensor m = dropout_mask(Shape{100000}, 0.25f, g);
  int64_t kept = 0, other = 0;
  for (float v : m.span()) {
    kept += v == 1.0f / 0.75f;
    other += v != 0.0f && v != 1.0f / 0.75f;
  }
  CHECK(other == 0);
  CHECK(std::fabs(kept / 100000.0 - 0.75) < 0.01);
  CHECK_THROWS_AS(dropout_mask(Shape{2}, 1.0f, g), Error);
}

TEST_CASE("allocator: a freed large block serves a request of nearly the same size") {
  release_cached_blocks();
  const int64_t floats = (int64_t{3} << 20) / 4 + 1000;  // 3 MB and a bit: the 3.5 MB class
  float* first = allocate_floats(floats);
  first[floats - 1] = 1.0f;
  release_floats(first, floats);
  const AllocatorStats before = allocator_stats();
  CHECK(before.cached_bytes == (size_t{7} << 19));
  float* second = allocate_floats(floats + 5000);  // a few tokens more: still the same class
  second[floats + 4999] = 2.0f;                    // the whole request is usable
  const AllocatorStats after = allocator_stats();
  CHECK(second == first);
  CHECK(after.hits == before.hits + 1);
  CHECK(after.cached_bytes == 0);
  release_floats(second, floats + 5000);
  float* bigger = allocate_floats((int64_t{4} << 20) / 4 + 1);  // past 3.5 MB: another class, a miss
  CHECK(bigger != first);
  CHECK(allocator_stats().misses == after.misses + 1);
  release_floats(bigger, (int64_t{4} << 20) / 4 + 1);
  release_cached_blocks();
}

TEST_CASE("allocator: the cache keeps as much as the program had in use at once") {
  // Four 96 MB blocks live together (a step's activations, say) are more than
  // the cache's floor; freed, all four are kept, and the next step's four
  // requests are all served from the cache.
  release_cached_blocks();
  const int64_t floats = (int64_t{96} << 20) / 4;
  const size_t total = 4 * (size_t{96} << 20);
  REQUIRE(total > kCacheFloorBytes);
  std::vector<float*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(allocate_floats(floats));
  CHECK(allocator_stats().live_bytes == total);
  CHECK(allocator_stats().peak_live_bytes == total);
  for (float* p : blocks) release_floats(p, floats);
  const AllocatorStats freed = allocator_stats();
  CHECK(freed.live_bytes == 0);
  CHECK(freed.cached_bytes == total);
  for (float*& p : blocks) p = allocate_floats(floats);
  const AllocatorStats again = allocator_stats();
  CHECK(again.hits == freed.hits + 4);
  CHECK(again.misses == freed.misses);
  for (float* p : blocks) release_floats(p, floats);
  release_cached_blocks();
  CHECK(allocator_stats().cached_bytes == 0);
  CHECK(allocator_stats().peak_live_bytes == 0);
}

TEST_CASE("under a batch shard, each row draws what the whole batch draws for it") {
  // Global [T=3, B=7, E=5], time-major (batch axis 1), as two processes would split it.
  Generator whole_gen(21);
  const Tensor whole_mask = dropout_mask(Shape{3, 7, 5}, 0.3f, whole_gen, 1);
  const Tensor whole_noise = normal(Shape{3, 7, 5}, 0.0f, 1.0f, whole_gen, 1);
  for (auto [first, rows] : {std::pair<int64_t, int64_t>{0, 4}, {4, 3}}) {
    Generator gen(21);
    ScopedBatchShard shard(7, first, rows);
    const Tensor mask = dropout_mask(Shape{3, rows, 5}, 0.3f, gen, 1);
    const Tensor noise = normal(Shape{3, rows, 5}, 0.0f, 1.0f, gen, 1);
    CHECK(gen.offset() == whole_gen.offset());
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t b = 0; b < rows; ++b)
        for (int64_t e = 0; e < 5; ++e) {
          REQUIRE(mask.at({t, b, e}) == whole_mask.at({t, first + b, e}));
          REQUIRE(noise.at({t, b, e}) == whole_noise.at({t, first + b, e}));
        }
    // A shape whose batch axis does not hold the shard's rows is refused.
    CHECK_THROWS_AS(dropout_mask(Shape{rows + 1, 5}, 0.3f, gen, 0), Error);
  }
  CHECK(!batch_shard().active());  // the scope ended
}
