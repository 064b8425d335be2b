// What a step keeps alive (issue 20): the allocator's bound, the tape's
// release during backward, the fused ops against their composed forms, and
// the allocation tags that bench_memory reports.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "rmsgrad/autograd/attention_ops.h"
#include "rmsgrad/core/allocation_tags.h"
#include "rmsgrad/core/allocator.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

size_t held_bytes() {
  const AllocatorStats s = allocator_stats();
  return s.live_bytes + s.cached_bytes;
}

// Values and gradients of f(a, b) under a fixed projection.
struct Result {
  Tensor value, da, db;
};
template <class F>
Result run(const Tensor& a0, const Tensor& b0, F f) {
  Var a = parameter(a0.clone()), b = parameter(b0.clone());
  Var y = f(a, b);
  Generator gen(5);
  Var loss = sum(y * constant(uniform(y.shape(), -1.0f, 1.0f, gen)));
  loss.backward();
  Result r{y.value().clone(), a.grad().clone(), b.grad().clone()};
  tape().clear();
  return r;
}

void check_same_bits(const Result& x, const Result& y) {
  CHECK(x.value.to_vector() == y.value.to_vector());
  CHECK(x.da.to_vector() == y.da.to_vector());
  CHECK(x.db.to_vector() == y.db.to_vector());
}

}  // namespace

TEST_CASE("allocator: live and cached blocks together stay within (1 + headroom) of the peak") {
  release_cached_blocks();
  set_cache_settings({.headroom = 0.25});
  // A step of 24 blocks of one size, then steps of other sizes, as batches of
  // new lengths would: the blocks of old sizes must go back to the system.
  const size_t floor = kCacheFloorBytes;
  size_t worst = 0;
  for (int shape = 0; shape < 12; ++shape) {
    const int64_t floats = (int64_t{8} << 20) / 4 + shape * (int64_t{3} << 18);  // 8 MB, 8.75 MB, ...
    std::vector<float*> blocks;
    for (int i = 0; i < 24; ++i) blocks.push_back(allocate_floats(floats));
    worst = std::max(worst, held_bytes());
    for (float* p : blocks) release_floats(p, floats);
    worst = std::max(worst, held_bytes());
  }
  const AllocatorStats s = allocator_stats();
  MESSAGE("peak live " << s.peak_live_bytes / (1 << 20) << " MB, most held " << worst / (1 << 20) << " MB, "
                       << s.evictions << " blocks evicted");
  CHECK(worst <= std::max(floor, static_cast<size_t>(1.25 * static_cast<double>(s.peak_live_bytes))));
  CHECK(s.evictions > 0);
  release_cached_blocks();
}

TEST_CASE("allocator: a cycle of sizes that needs more than 1.25x the peak stops faulting blocks in") {
  release_cached_blocks();
  set_cache_settings({.headroom = 0.25});
  // Each step: ten 10 MB blocks live at once (the peak, 100 MB), freed; then
  // four 8 MB blocks while the ten wait for the next step. Holding all of
  // them takes 132 MB, more than 1.25 × 100: without regrowth every step
  // would evict one block and map it again.
  const int64_t big = (int64_t{10} << 20) / 4, small = (int64_t{8} << 20) / 4;
  auto step = [&] {
    std::vector<float*> blocks;
    for (int i = 0; i < 10; ++i) blocks.push_back(allocate_floats(big));
    for (float* p : blocks) release_floats(p, big);
    blocks.clear();
    for (int i = 0; i < 4; ++i) blocks.push_back(allocate_floats(small));
    for (float* p : blocks) release_floats(p, small);
  };
  for (int s = 0; s < 5; ++s) step();
  const AllocatorStats before = allocator_stats();
  size_t worst = 0;
  for (int s = 0; s < 5; ++s) {
    step();
    worst = std::max(worst, held_bytes());
  }
  const AllocatorStats after = allocator_stats();
  CHECK(after.misses == before.misses);  // every block came from the cache
  CHECK(after.evictions == before.evictions);
  CHECK(worst <= static_cast<size_t>(1.5 * static_cast<double>(after.peak_live_bytes)));
  release_cached_blocks();
}

TEST_CASE("backward releases what it has passed; values held outside the tape stay") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{1000}));
  std::weak_ptr<Node> hidden_node;
  Var kept;
  Var loss;
  {
    Var hidden = tanh(w * 2.0f);
    hidden_node = hidden.node_ptr();
    kept = exp(hidden);
    loss = sum(kept);
  }
  loss.backward();
  CHECK(hidden_node.expired());                       // nothing held it: freed by the pass
  CHECK(kept.value().defined());                      // a Var the caller holds keeps its value
  CHECK(loss.item() == doctest::Approx(1000.0f * std::exp(std::tanh(2.0f))));
  CHECK_THROWS_AS(loss.backward(), Error);            // the graph is gone
  CHECK(w.grad().at({0}) == doctest::Approx(std::exp(std::tanh(2.0f)) * (1 - std::pow(std::tanh(2.0f), 2)) * 2));
}

TEST_CASE("fused ops give the bits of their composed forms") {
  Generator gen(3);
  const Tensor context = normal(Shape{7, 5, 12}, 0.0f, 1.0f, gen);
  const Tensor row = normal(Shape{1, 5, 12}, 0.0f, 1.0f, gen);
  auto fused_add_tanh = [](const Var& a, const Var& b) { return add_tanh(a, b); };
  auto composed_add_tanh = [](const Var& a, const Var& b) { return tanh(a + b); };
  SUBCASE("add_tanh") {
    check_same_bits(run(context, row, fused_add_tanh), run(context, row, composed_add_tanh));
  }
  SUBCASE("add_tanh, the row first, used twice (gradients accumulate), columns split into chunks") {
    const Tensor keys = normal(Shape{22, 8, 640}, 0.0f, 1.0f, gen);
    const Tensor query = normal(Shape{8, 640}, 0.0f, 1.0f, gen);
    auto fused = [](const Var& q, const Var& k) { return add_tanh(q, k) + add_tanh(q, k * 0.5f); };
    auto composed = [](const Var& q, const Var& k) { return tanh(q + k) + tanh(q + k * 0.5f); };
    check_same_bits(run(query, keys, fused), run(query, keys, composed));
  }
  SUBCASE("add_tanh, broadcast along a middle axis (the general path)") {
    const Tensor column = normal(Shape{7, 1, 12}, 0.0f, 1.0f, gen);
    check_same_bits(run(context, column, fused_add_tanh), run(context, column, composed_add_tanh));
  }
  SUBCASE("weighted_sum") {
    const Tensor weights = uniform(Shape{7, 5}, 0.0f, 1.0f, gen);
    auto fused = [](const Var& w, const Var& v) { return weighted_sum(w, v); };
    auto composed = [](const Var& w, const Var& v) { return sum(reshape(w, {w.dim(0), w.dim(1), 1}) * v, 0); };
    check_same_bits(run(weights, context, fused), run(weights, context, composed));
  }
  SUBCASE("weighted sums over gathered values: three steps' dv in one pass, after a term made before it") {
    const Tensor weights = uniform(Shape{7, 5}, 0.0f, 1.0f, gen);
    auto fused = [](const Var& w, const Var& v) {
      Var y = sum(tanh(v), 0);  // made before the gathered node: its backward runs after
      const AttentionValues gathered = AttentionValues::gathered(v);
      for (float k : {1.0f, 2.0f, 3.0f}) y = y + gathered.weighted_sum(w * k);
      return y;
    };
    auto composed = [](const Var& w, const Var& v) {
      Var y = sum(tanh(v), 0);
      for (float k : {1.0f, 2.0f, 3.0f}) y = y + sum(reshape(w * k, {w.dim(0), w.dim(1), 1}) * v, 0);
      return y;
    };
    check_same_bits(run(weights, context, fused), run(weights, context, composed));
  }
  SUBCASE("affine, through Linear's linear()") {
    const Tensor weight = normal(Shape{9, 12}, 0.0f, 1.0f, gen);
    Tensor bias = normal(Shape{9}, 0.0f, 1.0f, gen);
    auto fused = [&](const Var& x, const Var& w) { return linear(x, w, constant(bias)); };
    auto composed = [&](const Var& x, const Var& w) { return matmul(x, w, false, true) + constant(bias); };
    check_same_bits(run(context, weight, fused), run(context, weight, composed));
  }
}

TEST_CASE("gathered attention values: a second backward over a kept graph adds its own steps' gradients, no more") {
  tape().clear();
  Generator gen(4);
  Var v = parameter(normal(Shape{6, 3, 8}, 0.0f, 1.0f, gen));
  Var w = constant(uniform(Shape{6, 3}, 0.0f, 1.0f, gen));
  const AttentionValues gathered = AttentionValues::gathered(v);
  Var y = gathered.weighted_sum(w) + gathered.weighted_sum(w * 2.0f);
  const Tensor dy = normal(y.shape(), 0.0f, 1.0f, gen);
  tape().backward(y, dy);
  const Tensor once = v.grad().clone();
  tape().backward(y, dy);
  std::vector<float> twice = once.to_vector();
  for (float& x : twice) x *= 2.0f;
  CHECK(v.grad().to_vector() == twice);  // twice the first, not three times
  tape().clear();
}

TEST_CASE("allocation tags charge a forward op's output to the op") {
  set_allocation_tracking(true);
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{64, 256}));  // 64 KB: tracked like any block
  Var y = tanh(w);
  bool found = false;
  for (const TaggedBytes& t : allocation_breakdown().tags)
    if (t.tag == "forward:tanh") found = t.live >= size_t{64} * 256 * 4;
  CHECK(found);
  tape().clear();
  set_allocation_tracking(false);
}
