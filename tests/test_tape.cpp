// The tape: recording order, accumulation, skipping, no-grad, release, printing,
// what it tells an observer, and the op profile that listens (bench/profiling.h).
#include <doctest/doctest.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "rmsgrad/core/observer.h"
#include "rmsgrad/rmsgrad.h"
#ifdef RG_BENCH_OBSERVERS
#include "bench/profiling.h"
#endif

using namespace rg;

TEST_CASE("a value used twice receives both gradients") {
  Var x = parameter(Tensor::from(Shape{2}, {3, -2}));
  Var y = sum(x * x + x);  // dy/dx = 2x + 1
  y.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{7, -3});
  tape().clear();
}

// Ops whose backward writes a fresh gradient buffer, or adds into one that an
// earlier backward (the input's later use) has filled, over enough elements
// for two threads to split the work.
TEST_CASE("dropout, relu_dropout and permute give the same gradient whether it is their input's first or not") {
  set_num_threads(2);
  auto record_in_order = [](bool a_first, auto&& a, auto&& b) {
    if (a_first) a();
    b();
    if (!a_first) a();
  };
  Generator values(3);
  const Tensor x_value = uniform(Shape{6, 50, 4, 64}, -1.0f, 1.0f, values);
  const Tensor weights = uniform(x_value.shape(), -1.0f, 1.0f, values);
  // d/dx [Σ dropout(x) + 2 Σ x] = m + 2, whichever backward runs first; the
  // forward is x · m bit for bit, m being dropout_mask's from the same draws.
  for (bool dropout_first : {true, false}) {
    Var x = parameter(x_value.clone());
    Generator gen(9), same_gen(9);
    const Tensor mask = dropout_mask(x_value.shape(), 0.25f, same_gen);
    Var dropped, doubled;  // backward runs in reverse: the op recorded first adds to the other's gradient
    record_in_order(dropout_first, [&] { dropped = dropout(x, 0.25f, true, gen); }, [&] { doubled = x * 2.0f; });
    (sum(dropped) + sum(doubled)).backward();
    for (int64_t i = 0; i < x_value.numel(); ++i) {
      REQUIRE_MESSAGE(dropped.value().data()[i] == x_value.data()[i] * mask.data()[i], "element " << i);
      REQUIRE_MESSAGE(x.grad().data()[i] == mask.data()[i] + 2.0f, "element " << i);
    }
    tape().clear();
  }
  // relu_dropout is dropout(relu(x)): the same values bit for bit. The
  // gradient of Σ w ⊙ relu_dropout(x) + 2 Σ x is w/(1−p) + 2 where y > 0,
  // else 2. Where relu_dropout's backward comes first (it assigns) it is the
  // composed ops' bits; where it adds to the 2 it may be one fused
  // multiply-add, rounded once where the composed ops round twice: both
  // within 3·2⁻²⁴ of the exact value (w/(1−p) ∈ [−4/3, 4/3] is rounded once
  // and the sum, at least 2/3, once more).
  for (bool fused_first : {true, false}) {
    Var x = parameter(x_value.clone()), same_x = parameter(x_value.clone());
    Generator gen(9), same_gen(9);
    Var fused, doubled;
    record_in_order(fused_first, [&] { fused = relu_dropout(x, 0.25f, true, gen); }, [&] { doubled = x * 2.0f; });
    (sum(fused * constant(weights)) + sum(doubled)).backward();
    Var composed = dropout(relu(same_x), 0.25f, true, same_gen);
    Var same_doubled = same_x * 2.0f;
    (sum(composed * constant(weights)) + sum(same_doubled)).backward();
    const float scale = 1.0f / 0.75f;
    for (int64_t i = 0; i < x_value.numel(); ++i) {
      REQUIRE_MESSAGE(fused.value().data()[i] == composed.value().data()[i], "element " << i);
      const double exact = fused.value().data()[i] > 0.0f ? double{weights.data()[i]} * scale + 2.0 : 2.0;
      for (float got : {x.grad().data()[i], same_x.grad().data()[i]})
        REQUIRE_MESSAGE(std::fabs(got - exact) <= 3.0 * std::ldexp(std::fabs(exact), -24), "element " << i);
      if (!fused_first) REQUIRE_MESSAGE(x.grad().data()[i] == same_x.grad().data()[i], "element " << i);
    }
    tape().clear();
  }
  // The head split (last axis kept) and a full reversal: every output row
  // read from where its index says, rows split over threads at any point.
  for (const std::vector<int>& order : {std::vector<int>{0, 2, 1, 3}, std::vector<int>{3, 1, 0, 2}}) {
    Var x = parameter(x_value.clone());
    Var y = permute(x, order);
    const Shape& s = x_value.shape();
    int64_t at[4];
    for (at[0] = 0; at[0] < s[0]; ++at[0])
      for (at[1] = 0; at[1] < s[1]; ++at[1])
        for (at[2] = 0; at[2] < s[2]; ++at[2])
          for (at[3] = 0; at[3] < s[3]; ++at[3])
            REQUIRE(y.value().at({at[order[0]], at[order[1]], at[order[2]], at[order[3]]}) ==
                    x_value.at({at[0], at[1], at[2], at[3]}));
    // d/dx [Σ w ⊙ x + Σ permute(w, order) ⊙ permute(x, order)] = 2w: the
    // permute's backward adds the permuted-back gradient to the first term's.
    Var loss = sum(x * constant(weights)) + sum(y * permute(constant(weights), order));
    loss.backward();
    for (int64_t i = 0; i < x_value.numel(); ++i)
      REQUIRE_MESSAGE(x.grad().data()[i] == 2.0f * weights.data()[i], "element " << i);
    tape().clear();
  }
}

TEST_CASE("parameter gradients accumulate across backward passes until zeroed") {
  Var w = parameter(Tensor::from(Shape{1}, {2}));
  for (int step = 0; step < 3; ++step) {
    sum(w * 5.0f).backward();
    tape().clear();
  }
  CHECK(w.grad().item() == 15.0f);
  w.zero_grad();
  CHECK(w.grad().item() == 0.0f);
}

TEST_CASE("constants are not recorded and get no gradient") {
  tape().clear();
  Var c = constant(Tensor::ones(Shape{3}));
  Var d = exp(c) * 2.0f;  // no input needs a gradient: nothing recorded
  CHECK(tape().size() == 0);
  CHECK_FALSE(d.requires_grad());
  Var w = parameter(Tensor::ones(Shape{3}));
  Var loss = sum(w * d);
  CHECK(tape().size() == 2);
  loss.backward();
  CHECK_FALSE(c.has_grad());
  CHECK(w.grad().at({0}) == doctest::Approx(2.0f * std::exp(1.0f)));
  tape().clear();
}

TEST_CASE("nodes that no gradient reaches are skipped") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{2}));
  Var used = sum(w * 3.0f);
  Var unused = sum(exp(w));  // recorded after, never part of the loss
  used.backward();
  CHECK(w.grad().to_vector() == std::vector<float>{3, 3});
  CHECK_FALSE(unused.has_grad());
  tape().clear();
}

TEST_CASE("no-grad scope records nothing") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{2}));
  {
    NoGradGuard guard;
    Var y = sum(w * w);
    CHECK_FALSE(y.requires_grad());
    CHECK(tape().size() == 0);
    CHECK_FALSE(tape().recording());
  }
  CHECK(tape().recording());
  CHECK(sum(w).requires_grad());
  tape().clear();
}

TEST_CASE("a graph is freed when its last Var goes, without clear()") {
  Var w = parameter(Tensor::ones(Shape{100}));
  std::weak_ptr<Node> intermediate;
  {
    Var h = tanh(w * 2.0f);
    intermediate = h.node_ptr();
    Var loss = sum(h);
    CHECK(tape().size() == 3);
  }
  CHECK(intermediate.expired());  // the tape held it weakly
  CHECK(tape().size() == 0);
  CHECK(w.has_grad() == false);
}

TEST_CASE("a training loop that never clears the tape keeps no graph alive") {
  Var w = parameter(Tensor::from(Shape{2}, {1, -1}));
  std::weak_ptr<Node> first_step_node;
  for (int step = 0; step < 5000; ++step) {  // past the tape's first compaction (4096 entries)
    Var h = tanh(w * 0.5f);
    if (step == 0) first_step_node = h.node_ptr();
    Var loss = sum(h * h);
    loss.backward();
    w.value().add_(w.grad(), -0.01f);
    w.zero_grad();
  }
  CHECK(first_step_node.expired());
  CHECK(tape().size() == 0);
}

TEST_CASE("backward a second time through a released graph is an error") {
  Var w = parameter(Tensor::ones(Shape{2}));
  Var loss = sum(w * 3.0f);
  loss.backward();
  CHECK_THROWS_WITH_AS(loss.backward(),
                       doctest::Contains("this graph was already run backward, and that pass released it"), Error);
  CHECK(w.grad().to_vector() == std::vector<float>{3, 3});  // not doubled
}

TEST_CASE("two losses sharing a graph: the second backward is refused, their sum works") {
  Var w = parameter(Tensor::ones(Shape{2}));
  Var h = exp(w);
  Var a = sum(h), b = sum(h * 2.0f);
  a.backward();
  CHECK_THROWS_WITH_AS(b.backward(), doctest::Contains("an earlier backward released"), Error);
  w.zero_grad();
  Var h2 = exp(w);
  (sum(h2) + sum(h2 * 2.0f)).backward();
  CHECK(w.grad().at({0}) == doctest::Approx(3.0f * std::exp(1.0f)));
}

TEST_CASE("backward from a loss recorded before tape().clear() is an error") {
  Var w = parameter(Tensor::ones(Shape{2}));
  Var loss = sum(w * 3.0f);
  tape().clear();
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("recorded before tape().clear()"), Error);
  CHECK_FALSE(w.has_grad());
}

TEST_CASE("a state carried into the next step must be detached") {
  Var w = parameter(Tensor::from(Shape{2}, {0.5f, -0.5f}));
  Var state = constant(Tensor::ones(Shape{2}));
  state = tanh(state * w);
  sum(state).backward();  // releases the graph behind `state`
  CHECK_THROWS_WITH_AS(tanh(state * w), doctest::Contains("take x.detach()"), Error);

  // Truncated back-propagation through time: the value goes on, the graph does not.
  Var carried = state.detach();
  CHECK_FALSE(carried.requires_grad());
  CHECK(carried.value().to_vector() == state.value().to_vector());
  w.zero_grad();
  Var next = tanh(carried * w);
  sum(next).backward();
  CHECK(w.has_grad());

  Var before_clear = tanh(next.detach() * w);
  tape().clear();
  CHECK_THROWS_WITH_AS(sum(before_clear * w), doctest::Contains("recorded before tape().clear()"), Error);
}

TEST_CASE("the tape prints id, op, shape and inputs") {
  tape().clear();
  Var a = parameter(Tensor::ones(Shape{2, 3}));
  Var b = parameter(Tensor::ones(Shape{3, 4}));
  Var c = matmul(a, b);
  Var d = relu(c);
  std::string s = tape().str();
  CHECK(s.find(fmt::format("#{} matmul [2, 4] <- #{}(leaf) #{}(leaf)", c.node()->id, a.node()->id, b.node()->id)) !=
        std::string::npos);
  CHECK(s.find(fmt::format("#{} relu [2, 4] <- #{}\n", d.node()->id, c.node()->id)) != std::string::npos);
  tape().clear();
}

TEST_CASE("backward checks its input") {
  tape().clear();
  Var w = parameter(Tensor::ones(Shape{2}));
  Var y = w * 2.0f;
  CHECK_THROWS_WITH_AS(y.backward(), "backward: the loss must have one element, its shape is [2]", Error);
  Var c = constant(Tensor::ones(Shape{1}));
  CHECK_THROWS_AS(sum(c).backward(), Error);
  CHECK_THROWS_AS(tape().backward(y, Tensor::ones(Shape{3})), Error);
  tape().clear();
}

TEST_CASE("backward from a non-scalar output with a seed gradient") {
  tape().clear();
  Var x = parameter(Tensor::from(Shape{3}, {1, 2, 3}));
  Var y = x * x;
  tape().backward(y, Tensor::from(Shape{3}, {1, 0, -1}));
  CHECK(x.grad().to_vector() == std::vector<float>{2, 0, -6});
  tape().clear();
}

TEST_CASE("a seed gradient is adopted without a copy but never modified") {
  tape().clear();
  Var x = parameter(Tensor::from(Shape{2}, {1, 2}));
  Var y = x * 3.0f;
  Tensor seed = Tensor::from(Shape{2}, {1, 1});
  tape().backward(y, seed);
  CHECK_FALSE(y.has_grad());  // intermediate gradients are released after backward
  tape().backward(y, seed);   // a second pass propagates only its own seed
  CHECK(seed.to_vector() == std::vector<float>{1, 1});
  CHECK(x.grad().to_vector() == std::vector<float>{6, 6});
  // A leaf seeded directly: its buffer is the caller's until something adds.
  Var leaf = parameter(Tensor::from(Shape{2}, {0, 0}));
  Tensor s2 = Tensor::from(Shape{2}, {5, 5});
  tape().backward(leaf, s2);
  CHECK(leaf.grad().to_vector() == std::vector<float>{5, 5});
  leaf.zero_grad();
  CHECK(s2.to_vector() == std::vector<float>{5, 5});
  tape().backward(leaf, s2);
  tape().backward(leaf, s2);  // adds into the leaf's gradient: copies first
  CHECK(leaf.grad().to_vector() == std::vector<float>{10, 10});
  CHECK(s2.to_vector() == std::vector<float>{5, 5});
  tape().clear();
}

TEST_CASE("wrong inputs to ops throw, naming op and shapes") {
  Var a = constant(Tensor::zeros(Shape{2, 3}));
  Var b = constant(Tensor::zeros(Shape{4, 5}));
  CHECK_THROWS_WITH_AS(matmul(a, b), "matmul: inner dimensions differ: a is [2, 3], b is [4, 5]", Error);
  CHECK_THROWS_WITH_AS(add(a, b), "add: shapes [2, 3] and [4, 5] cannot be broadcast", Error);
  CHECK_THROWS_AS(sum(a, 2), Error);
  CHECK_THROWS_AS(reshape(a, {4, -1}), Error);
  CHECK_THROWS_AS(slice(a, 1, 2, 5), Error);
  CHECK_THROWS_AS(concat({a, b}, 0), Error);
  CHECK_THROWS_AS(index_select(a, 0, {0, 2}), Error);
  CHECK_THROWS_AS(embedding(a, Indices({0, 1, 2})), Error);
  CHECK_THROWS_AS(cross_entropy(a, Indices({0, 3})), Error);
  CHECK_THROWS_AS(cross_entropy(a, Indices({0})), Error);
  CHECK_THROWS_AS(permute(a, {0, 0}), Error);
  CHECK_THROWS_AS(split(a, {1, 1}, 1), Error);
  CHECK_THROWS_AS(masked_fill(a, Tensor::zeros(Shape{3, 3}), 0.0f), Error);
  CHECK_THROWS_AS(clamp(a, 1.0f, 0.0f), Error);
  CHECK_THROWS_AS(Var{Tensor{}}, Error);
}

TEST_CASE("backward reports each parameter once, when its gradient is final") {
  // w1 is used first in the forward, so it is the last to be done; w2 twice;
  // `spare` by nothing, so it is never reported.
  Var w1(Tensor::from(Shape{2}, {1.0f, 2.0f}), true), w2(Tensor::from(Shape{2}, {3.0f, -1.0f}), true);
  Var spare(Tensor::from(Shape{1}, {5.0f}), true);
  Var h = w1 * 2.0f;
  Var loss = sum(h * w2) + sum(w2 * w2);
  std::vector<std::pair<Node*, std::vector<float>>> reported;
  tape().backward(loss, [&](Node& leaf) {
    reported.emplace_back(&leaf, std::vector<float>(leaf.grad.span().begin(), leaf.grad.span().end()));
  });
  REQUIRE(reported.size() == 2);
  CHECK(reported[0].first == w2.node());
  CHECK(reported[1].first == w1.node());
  // What each held when reported is its final gradient: d/dw2 = 2 w1 + 2 w2, d/dw1 = 2 w2.
  CHECK(reported[0].second == std::vector<float>{8.0f, 2.0f});
  CHECK(reported[1].second == std::vector<float>{6.0f, -2.0f});
  CHECK(w2.grad().span()[0] == 8.0f);
  CHECK(!spare.has_grad());
}

namespace {

// Every hook heard, in order, as one line each (products by their shape).
struct EventLog : Observer {
  std::mutex mutex;
  std::vector<std::string> events;
  void add(std::string event) {
    std::lock_guard lock(mutex);
    events.push_back(std::move(event));
  }
  void op_recorded(const char* op) override { add(std::string("record ") + op); }
  void backward_ran(const char* op) override { add(std::string("backward ") + op); }
  void gemm_started(const GemmCall& c) override { add(fmt::format("gemm {}x{}x{}", c.m, c.n, c.k)); }
  void scope_entered(const char* name) override { add(std::string("enter ") + name); }
  void scope_left() override { add("leave"); }
};

// Whether `events` holds `expected` in this order, with anything between.
bool in_order(const std::vector<std::string>& events, const std::vector<std::string>& expected) {
  auto at = events.begin();
  for (const std::string& e : expected) {
    at = std::find(at, events.end(), e);
    if (at == events.end()) return false;
    ++at;
  }
  return true;
}

}  // namespace

TEST_CASE("an installed observer hears each op record itself after its products, then each backward") {
  Generator gen(3);
  Var w = parameter(normal(Shape{4, 3}, 0.0f, 0.1f, gen));
  Var x = constant(normal(Shape{2, 4}, 0.0f, 1.0f, gen));
  EventLog log;
  install_observer(&log);
  CHECK_THROWS_WITH_AS(install_observer(&log), doctest::Contains("already installed"), Error);
  Var loss = sum(tanh(matmul(x, w)));
  loss.backward();
  install_observer(nullptr);
  CHECK(installed_observer() == nullptr);
  sum(w * 2.0f).backward();  // heard by no one
  tape().clear();

  CAPTURE(fmt::format("{}", fmt::join(log.events, " | ")));
  // The forward: y = x·w [2, 3], then tanh and sum; the backward in reverse,
  // dW = xᵀ·dY [4, 3] into w's gradient, a leaf's.
  CHECK(in_order(log.events, {"gemm 2x3x4", "record matmul", "record tanh", "record sum", "enter backward workspace",
                              "backward sum", "backward tanh", "enter parameter gradients", "gemm 4x3x2",
                              "backward matmul"}));
  CHECK(std::count(log.events.begin(), log.events.end(), "record sum") == 1);
  // Every scope entered is left, the backward workspace last.
  int open = 0;
  for (const std::string& e : log.events) {
    open += e.starts_with("enter ") ? 1 : e == "leave" ? -1 : 0;
    CHECK(open >= 0);
  }
  CHECK(open == 0);
  CHECK(log.events.back() == "leave");
}

#ifdef RG_BENCH_OBSERVERS
TEST_CASE("a profile charges every stretch of a step to one op or phase, products apart") {
  Generator gen(3);
  Var w = parameter(normal(Shape{64, 64}, 0.0f, 0.1f, gen));
  Var x = constant(normal(Shape{32, 64}, 0.0f, 1.0f, gen));
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, bench::OpTimes> totals;
  double total = 0.0;
  {
    bench::OpProfile profile;
    CHECK(bench::OpProfile::current() == &profile);
    CHECK_THROWS_WITH_AS(bench::OpProfile(), doctest::Contains("already installed"), Error);
    Var loss = sum(tanh(matmul(x, w)));
    loss.backward();
    profile.mark("update");
    totals = profile.totals();
    total = profile.total_seconds();
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const char* name : {"matmul", "tanh", "sum", "matmul backward", "tanh backward", "update"}) {
    CAPTURE(name);
    REQUIRE(totals.count(name) == 1);
    CHECK(totals[name].calls == 1);
  }
  // Only the products' charges hold product time: matmul's forward, and its
  // backward (x is a constant: dW = xᵀ·dY, one product).
  CHECK(totals["matmul"].gemm_seconds > 0);
  CHECK(totals["matmul backward"].gemm_seconds > 0);
  CHECK(totals["tanh"].gemm_seconds == 0);
  for (const auto& [name, t] : totals) CHECK(t.gemm_seconds + t.allocation_seconds <= t.seconds + 1e-9);
  // The charges cover the profile's life and nothing else: at most what the
  // clock outside saw.
  CHECK(total > 0);
  CHECK(total <= elapsed);
  CHECK(bench::OpProfile::current() == nullptr);
  CHECK(installed_observer() == nullptr);
}

TEST_CASE("a gemm recording notes every product a step asks for") {
  Generator gen(3);
  Var w = parameter(normal(Shape{4, 3}, 0.0f, 0.1f, gen));
  Var x = constant(normal(Shape{2, 4}, 0.0f, 1.0f, gen));
  std::vector<GemmCall> calls;
  {
    bench::GemmRecording recording;
    sum(matmul(x, w)).backward();
    calls = recording.calls();
  }
  tape().clear();
  REQUIRE(calls.size() == 2);  // y = x·w, dW = xᵀ·dY
  CHECK((calls[0].m == 2 && calls[0].n == 3 && calls[0].k == 4 && !calls[0].trans_a));
  CHECK((calls[1].m == 4 && calls[1].n == 3 && calls[1].k == 2 && calls[1].trans_a));
  CHECK(bench::flops(calls[0]) == 2.0 * 2 * 3 * 4);
}
#endif
