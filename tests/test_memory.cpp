// What a step keeps alive: the allocator's bound, the tape's
// release during backward, the fused ops against their composed forms, what
// the allocator and the tape tell an observer of each block, and the
// allocation accounting that bench_memory reports from it.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rmsgrad/autograd/attention_ops.h"
#include "rmsgrad/core/allocator.h"
#include "rmsgrad/core/observer.h"
#include "rmsgrad/rmsgrad.h"
#ifdef RG_BENCH_OBSERVERS
#include "bench/allocation_accounting.h"
#endif

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
  set_cache_settings({.headroom = 0.25, .regrowth = 0.10});
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
  CHECK(worst <= static_cast<size_t>(1.35 * static_cast<double>(after.peak_live_bytes)));
  release_cached_blocks();
}

TEST_CASE("allocator: regrowth stops at (1 + headroom + regrowth) of the peak") {
  release_cached_blocks();
  set_cache_settings({.headroom = 0.25, .regrowth = 0.10});
  // The cycle above with six 8 MB blocks: holding all takes 148 MB for a
  // 100 MB peak, more than 1.35×, so the bound stops growing there and
  // blocks go on being evicted: memory is capped, not the page faults.
  const int64_t big = (int64_t{10} << 20) / 4, small = (int64_t{8} << 20) / 4;
  size_t worst = 0;
  for (int s = 0; s < 10; ++s) {
    std::vector<float*> blocks;
    for (int i = 0; i < 10; ++i) blocks.push_back(allocate_floats(big));
    for (float* p : blocks) release_floats(p, big);
    blocks.clear();
    for (int i = 0; i < 6; ++i) blocks.push_back(allocate_floats(small));
    worst = std::max(worst, held_bytes());
    for (float* p : blocks) release_floats(p, small);
    worst = std::max(worst, held_bytes());
  }
  const AllocatorStats s = allocator_stats();
  CHECK(worst <= static_cast<size_t>(1.35 * static_cast<double>(s.peak_live_bytes)));
  CHECK(s.evictions > 10);
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

namespace {

// Each block as the observer hears of it: its bytes, the scope open when it
// was allocated ("" outside any), and the op that recorded itself next.
struct BlockLog : Observer {
  struct Block {
    size_t bytes;
    std::string scope, op;
    bool released = false;
  };
  std::mutex mutex;
  std::vector<Block> blocks;             // in allocation order
  std::map<const void*, size_t> live;    // into blocks
  std::vector<size_t> unclaimed;         // allocated outside scopes since the last op recorded itself
  std::vector<std::string> open_scopes;  // (the test enters scopes on one thread)

  void allocation_finished(const void* p, size_t bytes) override {
    std::lock_guard lock(mutex);
    live[p] = blocks.size();
    if (open_scopes.empty()) unclaimed.push_back(blocks.size());
    blocks.push_back({bytes, open_scopes.empty() ? "" : open_scopes.back(), ""});
  }
  void release_started(const void* p, size_t) override {
    std::lock_guard lock(mutex);
    auto it = live.find(p);
    if (it == live.end()) return;  // allocated before the log was installed
    blocks[it->second].released = true;
    live.erase(it);
  }
  void op_recorded(const char* op) override {
    std::lock_guard lock(mutex);
    for (size_t i : unclaimed) blocks[i].op = op;
    unclaimed.clear();
  }
  void scope_entered(const char* name) override {
    std::lock_guard lock(mutex);
    open_scopes.push_back(name);
  }
  void scope_left() override {
    std::lock_guard lock(mutex);
    open_scopes.pop_back();
  }
};

}  // namespace

TEST_CASE("an observer hears each block: a forward's before its op records itself, a gradient in its scope") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{64, 256}));  // 64 KB
  BlockLog log;
  install_observer(&log);
  {
    Var y = tanh(w);
    sum(y).backward();
  }
  install_observer(nullptr);
  tape().clear();

  const size_t kBytes = size_t{64} * 256 * 4;
  auto count = [&](const std::string& scope, const std::string& op) {
    return std::count_if(log.blocks.begin(), log.blocks.end(), [&](const BlockLog::Block& b) {
      return b.bytes == kBytes && b.scope == scope && b.op == op;
    });
  };
  CHECK(count("", "tanh") == 1);                 // y, allocated before tanh recorded itself
  CHECK(count("parameter gradients", "") == 1);  // w's gradient
  CHECK(log.open_scopes.empty());
  // Everything the step allocated went back but w's gradient, which w keeps.
  for (const BlockLog::Block& b : log.blocks) CHECK((b.released || b.scope == "parameter gradients"));
  CHECK(log.live.size() == 1);
}

#ifdef RG_BENCH_OBSERVERS
TEST_CASE("allocation accounting charges a forward op's output to the op, a parameter's gradient to its tag") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{64, 256}));  // 64 KB: tracked like any block
  bench::AllocationAccounting accounting;
  auto live = [&](const std::string& tag) {
    for (const bench::TaggedBytes& t : accounting.breakdown().tags)
      if (t.tag == tag) return t.live;
    return size_t{0};
  };
  const size_t kBytes = size_t{64} * 256 * 4;
  Var y = tanh(w);
  CHECK(live("forward:tanh") == kBytes);
  {
    ObserverScope scope("inputs");
    Tensor batch = Tensor::zeros(Shape{64, 256});
    CHECK(live("inputs") == kBytes);
  }
  CHECK(live("inputs") == 0);
  sum(y).backward();
  CHECK(live("parameter gradients") == kBytes);
  CHECK(accounting.breakdown().peak >= 3 * kBytes);  // y, its gradient and w's
  tape().clear();
}
#endif
