// Gradient checks for every op in autograd/ops.h, table-driven in the style of
// ggml's test-backend-ops: each case is {name, inputs, f} and goes through
// rg::gradcheck with its default tolerances (see autograd/gradcheck.h).
//
// Every case runs twice: as written, and as f(x) + f(x). In the first run
// each input's gradient buffer is created by the op under test (the "assign"
// path of Node::input_grad, over uninitialised memory); in the second the
// later call's backward assigns and the earlier one's adds into it.
//
// Ops with kinks or ties (relu, abs, clamp, maximum, max, min, topk, l1 and
// huber loss, softplus's threshold) get inputs on a 0.1 grid offset by 0.05,
// or distinct values 0.1 apart, so no value is within the step (1e-3) of a
// kink; log, sqrt, rsqrt, divisors and fractional powers get |x| in [0.5, 2].
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

struct Case {
  std::string name;
  std::vector<Tensor> inputs;
  GradCheckFn f;
};

void check_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    GradCheckResult once = gradcheck(c.f, c.inputs);
    CHECK_MESSAGE(once.ok, c.name << ": " << once.report);
    auto twice = [&c](const std::vector<Var>& v) { return add(c.f(v), c.f(v)); };
    GradCheckResult both = gradcheck(twice, c.inputs);
    CHECK_MESSAGE(both.ok, c.name << " (used twice): " << both.report);
  }
}

// ---- deterministic inputs: every tensor has its own seed ----
template <class Draw>
Tensor filled(const Shape& s, uint64_t seed, Draw draw) {
  Generator gen(seed);
  Tensor t = Tensor::empty(s);
  for (float& x : t.span()) x = draw(gen);
  return t;
}
Tensor randn(const Shape& s, uint64_t seed) {
  return filled(s, seed, [](Generator& g) { return g.normal(); });
}
Tensor positive(const Shape& s, uint64_t seed) {  // in [0.5, 2]
  return filled(s, seed, [](Generator& g) { return g.uniform(0.5f, 2.0f); });
}
Tensor away_from_zero(const Shape& s, uint64_t seed) {  // |x| in [0.5, 2], either sign
  return filled(s, seed, [](Generator& g) { return g.uniform(0.5f, 2.0f) * (g.uniform() < 0.5f ? -1.0f : 1.0f); });
}
// 0.1·k + offset for k in [-15, 15): with offset 0.05, |x| ≥ 0.05 and no value
// is within 0.05 of 0, ±0.5 or any value of a grid with offset 0.
Tensor grid(const Shape& s, uint64_t seed, float offset = 0.05f) {
  return filled(s, seed, [offset](Generator& g) { return 0.1f * static_cast<float>(g.randint(30) - 15) + offset; });
}
Tensor mask01(const Shape& s, uint64_t seed) {  // 1 with probability 0.4
  return filled(s, seed, [](Generator& g) { return g.uniform() < 0.4f ? 1.0f : 0.0f; });
}
// All values distinct and 0.1 apart, shuffled: every maximum is unique.
Tensor distinct(const Shape& s, uint64_t seed) {
  Generator gen(seed);
  Tensor t = Tensor::empty(s);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) t.data()[i] = 0.1f * static_cast<float>(i - n / 2);
  for (int64_t i = n - 1; i > 0; --i) std::swap(t.data()[i], t.data()[gen.randint(i + 1)]);
  return t;
}

using BinaryOp = Var (*)(const Var&, const Var&);
using UnaryFn = std::function<Var(const Var&)>;

}  // namespace

TEST_CASE("gradcheck: elementwise binary ops, with broadcasting") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {Shape{4, 5}, Shape{4, 5}}, {Shape{4, 5}, Shape{5}},  {Shape{5}, Shape{4, 5}},
      {Shape{2, 3, 4}, Shape{2, 1, 4}}, {Shape{3, 1}, Shape{1, 4}}, {Shape{4, 5}, Shape{}},
      {Shape{}, Shape{4, 5}}, {Shape{}, Shape{}}};
  const std::vector<std::pair<const char*, BinaryOp>> ops = {
      {"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}, {"maximum", maximum}};
  std::vector<Case> cases;
  uint64_t seed = 100;
  for (const auto& [name, op] : ops) {
    for (const auto& [sa, sb] : shapes) {
      const std::string op_name = name;
      Tensor a = op_name == "maximum" ? grid(sa, seed++, 0.0f) : randn(sa, seed++);
      Tensor b = op_name == "div" ? away_from_zero(sb, seed++) : op_name == "maximum" ? grid(sb, seed++) : randn(sb, seed++);
      cases.push_back({op_name + " " + sa.str() + " with " + sb.str(), {a, b},
                       [op](const std::vector<Var>& v) { return op(v[0], v[1]); }});
    }
  }
  // One operand a constant: its gradient is skipped, the other's still flows.
  Tensor c = away_from_zero(Shape{5}, 190);
  cases.push_back({"mul by a constant [5]", {randn(Shape{4, 5}, 191)},
                   [c](const std::vector<Var>& v) { return mul(v[0], constant(c)); }});
  cases.push_back({"div of a constant [5] by x", {away_from_zero(Shape{4, 5}, 192)},
                   [c](const std::vector<Var>& v) { return div(constant(c), v[0]); }});
  // The same Var as both operands: two contributions accumulate.
  cases.push_back({"mul(x, x)", {randn(Shape{3, 4}, 193)}, [](const std::vector<Var>& v) { return v[0] * v[0]; }});
  cases.push_back({"maximum(x, -x)", {grid(Shape{3, 4}, 194)},
                   [](const std::vector<Var>& v) { return maximum(v[0], -v[0]); }});
  check_cases(cases);
}

TEST_CASE("gradcheck: unary ops and scalar forms") {
  const Shape s{3, 5};
  const std::vector<std::pair<const char*, UnaryFn>> smooth = {
      {"neg", [](const Var& x) { return neg(x); }},
      {"exp", [](const Var& x) { return exp(x); }},
      {"tanh", [](const Var& x) { return tanh(x); }},
      {"sigmoid", [](const Var& x) { return sigmoid(x); }},
      {"square", [](const Var& x) { return square(x); }},
      {"add scalar", [](const Var& x) { return x + 1.5f; }},
      {"sub scalar", [](const Var& x) { return x - 0.5f; }},
      {"mul scalar", [](const Var& x) { return -2.5f * x; }},
      {"div by scalar", [](const Var& x) { return x / 4.0f; }},
      {"scalar_sub", [](const Var& x) { return 3.0f - x; }},
  };
  const std::vector<std::pair<const char*, UnaryFn>> on_positive = {
      {"log", [](const Var& x) { return log(x); }},
      {"sqrt", [](const Var& x) { return sqrt(x); }},
      {"rsqrt", [](const Var& x) { return rsqrt(x); }},
      {"scalar / x", [](const Var& x) { return 2.0f / x; }},
  };
  const std::vector<std::pair<const char*, UnaryFn>> with_kinks = {
      {"relu", [](const Var& x) { return relu(x); }},
      {"leaky_relu default slope", [](const Var& x) { return leaky_relu(x); }},
      {"leaky_relu slope 0.2", [](const Var& x) { return leaky_relu(x, 0.2f); }},
      {"abs", [](const Var& x) { return abs(x); }},
      {"clamp [-0.5, 0.5]", [](const Var& x) { return clamp(x, -0.5f, 0.5f); }},
      {"clamp [0, 1]", [](const Var& x) { return clamp(x, 0.0f, 1.0f); }},
  };
  std::vector<Case> cases;
  uint64_t seed = 200;
  auto add_cases = [&](const auto& table, auto make_input) {
    for (const auto& [name, fn] : table)
      cases.push_back({name, {make_input(seed++)}, [fn](const std::vector<Var>& v) { return fn(v[0]); }});
  };
  add_cases(smooth, [&](uint64_t k) { return randn(s, k); });
  add_cases(on_positive, [&](uint64_t k) { return positive(s, k); });
  add_cases(with_kinks, [&](uint64_t k) { return grid(s, k); });
  check_cases(cases);
}

TEST_CASE("gradcheck: gelu, silu, swiglu, softplus and pow") {
  const Shape s{3, 5};
  // Inputs of scale 3 reach both tails of gelu, silu and softplus.
  auto wide = [&](uint64_t k) { return filled(s, k, [](Generator& g) { return 3.0f * g.normal(); }); };
  std::vector<Case> cases = {
      {"gelu", {wide(250)}, [](const std::vector<Var>& v) { return gelu(v[0]); }},
      {"gelu tanh", {wide(251)}, [](const std::vector<Var>& v) { return gelu(v[0], GeluApprox::Tanh); }},
      {"silu", {wide(252)}, [](const std::vector<Var>& v) { return silu(v[0]); }},
      {"swiglu", {wide(262), randn(s, 263)}, [](const std::vector<Var>& v) { return swiglu(v[0], v[1]); }},
      // One input as gate and value: both gradients reach it, added.
      {"swiglu of x with itself", {wide(264)}, [](const std::vector<Var>& v) { return swiglu(v[0], v[0]); }},
      {"softplus", {wide(253)}, [](const std::vector<Var>& v) { return softplus(v[0]); }},
      {"softplus beta -2", {wide(254)}, [](const std::vector<Var>& v) { return softplus(v[0], -2.0f); }},
      // β = 2, threshold 1: the switch to x at x = 0.5 is 0.05 from every grid value.
      {"softplus beta 2 threshold 1", {grid(s, 255)},
       [](const std::vector<Var>& v) { return softplus(v[0], 2.0f, 1.0f); }},
      {"pow 2", {randn(s, 256)}, [](const std::vector<Var>& v) { return pow(v[0], 2.0f); }},
      {"pow 3", {randn(s, 257)}, [](const std::vector<Var>& v) { return pow(v[0], 3.0f); }},
      {"pow 0", {randn(s, 258)}, [](const std::vector<Var>& v) { return pow(v[0], 0.0f); }},
      {"pow 0.5", {positive(s, 259)}, [](const std::vector<Var>& v) { return pow(v[0], 0.5f); }},
      {"pow -1.5", {positive(s, 260)}, [](const std::vector<Var>& v) { return pow(v[0], -1.5f); }},
      {"pow 2.7", {positive(s, 261)}, [](const std::vector<Var>& v) { return pow(v[0], 2.7f); }},
  };
  check_cases(cases);
}

TEST_CASE("gradcheck: reductions over every axis, with and without keepdim") {
  const Shape s{2, 3, 4};
  std::vector<Case> cases = {
      {"sum all", {randn(s, 300)}, [](const std::vector<Var>& v) { return sum(v[0]); }},
      {"mean all", {randn(s, 301)}, [](const std::vector<Var>& v) { return mean(v[0]); }},
  };
  for (int axis : {0, 1, 2, -1}) {
    for (bool keep : {false, true}) {
      const std::string tag = " axis " + std::to_string(axis) + (keep ? " keepdim" : "");
      cases.push_back({"sum" + tag, {randn(s, 310 + axis)},
                       [=](const std::vector<Var>& v) { return sum(v[0], axis, keep); }});
      cases.push_back({"mean" + tag, {randn(s, 320 + axis)},
                       [=](const std::vector<Var>& v) { return mean(v[0], axis, keep); }});
      cases.push_back({"max" + tag, {distinct(s, 330 + axis)},
                       [=](const std::vector<Var>& v) { return max(v[0], axis, keep); }});
      cases.push_back({"min" + tag, {distinct(s, 340 + axis)},
                       [=](const std::vector<Var>& v) { return min(v[0], axis, keep); }});
    }
  }
  cases.push_back({"max all", {distinct(s, 350)}, [](const std::vector<Var>& v) { return max(v[0]); }});
  cases.push_back({"min all", {distinct(s, 351)}, [](const std::vector<Var>& v) { return min(v[0]); }});
  check_cases(cases);
}

TEST_CASE("gradcheck: sum, mean, var and std over several axes") {
  const Shape s{2, 3, 4};
  struct AxesCase {
    std::vector<int> axes;
    bool keep;
    int correction;
  };
  const std::vector<AxesCase> table = {
      {{0, 2}, false, 1}, {{1, 2}, true, 0}, {{-1, 0}, false, 2},
      {{}, false, 1}, {{2, 1, 0}, true, 1}, {{1}, false, 1}};
  std::vector<Case> cases;
  uint64_t seed = 360;
  for (const AxesCase& c : table) {
    std::string tag = " axes {";
    for (int a : c.axes) tag += std::to_string(a) + " ";
    tag += std::string("}") + (c.keep ? " keepdim" : "") + " correction " + std::to_string(c.correction);
    cases.push_back({"sum" + tag, {randn(s, seed++)},
                     [c](const std::vector<Var>& v) { return sum(v[0], c.axes, c.keep); }});
    cases.push_back({"mean" + tag, {randn(s, seed++)},
                     [c](const std::vector<Var>& v) { return mean(v[0], c.axes, c.keep); }});
    cases.push_back({"var" + tag, {randn(s, seed++)},
                     [c](const std::vector<Var>& v) { return var(v[0], c.axes, c.correction, c.keep); }});
    cases.push_back({"std" + tag, {randn(s, seed++)},
                     [c](const std::vector<Var>& v) { return rg::std(v[0], c.axes, c.correction, c.keep); }});
  }
  cases.push_back({"var axis 1", {randn(s, seed++)}, [](const std::vector<Var>& v) { return var(v[0], 1); }});
  cases.push_back({"std axis -1 keepdim", {randn(s, seed++)},
                   [](const std::vector<Var>& v) { return rg::std(v[0], -1, 1, true); }});
  check_cases(cases);
}

TEST_CASE("gradcheck: matmul, every transpose combination, 2-D, batched and 3-D x 2-D") {
  const int64_t B = 2, M = 3, K = 4, N = 5;
  std::vector<Case> cases;
  uint64_t seed = 400;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const std::string tag = std::string(ta ? " a^T" : "") + (tb ? " b^T" : "");
      const Shape a2 = ta ? Shape{K, M} : Shape{M, K}, b2 = tb ? Shape{N, K} : Shape{K, N};
      const Shape a3 = ta ? Shape{B, K, M} : Shape{B, M, K}, b3 = tb ? Shape{B, N, K} : Shape{B, K, N};
      auto f = [=](const std::vector<Var>& v) { return matmul(v[0], v[1], ta, tb); };
      cases.push_back({"matmul 2-D" + tag, {randn(a2, seed++), randn(b2, seed++)}, f});
      cases.push_back({"matmul batched 3-D" + tag, {randn(a3, seed++), randn(b3, seed++)}, f});
      // matmul rejects trans_a for [..., M, K] · [K, N] (it folds a's leading axes into rows).
      if (!ta) cases.push_back({"matmul 3-D x 2-D" + tag, {randn(a3, seed++), randn(b2, seed++)}, f});
    }
  }
  cases.push_back({"matmul x^T x (same Var twice)", {randn(Shape{M, K}, seed++)},
                   [](const std::vector<Var>& v) { return matmul(v[0], v[0], true, false); }});
  check_cases(cases);
}

TEST_CASE("gradcheck: shape ops") {
  const Shape s{2, 3, 4};
  auto x = [&](uint64_t k) { return randn(s, k); };
  std::vector<Case> cases = {
      {"reshape [6, 4]", {x(500)}, [](const std::vector<Var>& v) { return reshape(v[0], {6, 4}); }},
      {"reshape [4, -1]", {x(501)}, [](const std::vector<Var>& v) { return reshape(v[0], {4, -1}); }},
      {"transpose 0 2", {x(502)}, [](const std::vector<Var>& v) { return transpose(v[0], 0, 2); }},
      {"transpose 1 -1", {x(503)}, [](const std::vector<Var>& v) { return transpose(v[0], 1, -1); }},
      {"permute 2 0 1", {x(504)}, [](const std::vector<Var>& v) { return permute(v[0], {2, 0, 1}); }},
      {"permute 1 2 0", {x(505)}, [](const std::vector<Var>& v) { return permute(v[0], {1, 2, 0}); }},
      {"concat axis 0", {x(506), randn(Shape{1, 3, 4}, 507), randn(Shape{3, 3, 4}, 508)},
       [](const std::vector<Var>& v) { return concat(v, 0); }},
      {"concat axis 1", {x(509), randn(Shape{2, 1, 4}, 510)}, [](const std::vector<Var>& v) { return concat(v, 1); }},
      {"concat axis -1", {x(511), randn(Shape{2, 3, 2}, 512), randn(Shape{2, 3, 1}, 513)},
       [](const std::vector<Var>& v) { return concat(v, -1); }},
      {"concat the same Var twice", {x(514)}, [](const std::vector<Var>& v) { return concat({v[0], v[0]}, 1); }},
      {"slice axis 0 [1, 2)", {x(540)}, [](const std::vector<Var>& v) { return slice(v[0], 0, 1, 2); }},
      {"slice axis 1 [1, 3)", {x(541)}, [](const std::vector<Var>& v) { return slice(v[0], 1, 1, 3); }},
      {"slice axis -1 [0, 3)", {x(542)}, [](const std::vector<Var>& v) { return slice(v[0], -1, 0, 3); }},
      {"slice full range", {x(543)}, [](const std::vector<Var>& v) { return slice(v[0], 2, 0, 4); }},
  };
  for (int axis : {0, 1, 2, -1}) {
    cases.push_back({"stack axis " + std::to_string(axis), {x(520 + axis), x(525 + axis), x(530 + axis)},
                     [axis](const std::vector<Var>& v) { return stack(v, axis); }});
  }
  // split: every piece reaches the output with its own weight, so a piece's
  // gradient landing in the wrong place cannot go unnoticed.
  struct SplitCase {
    int axis;
    std::vector<int64_t> sizes;
  };
  for (const SplitCase& sc : {SplitCase{0, {1, 1}}, SplitCase{1, {1, 2}}, SplitCase{2, {1, 2, 1}},
                              SplitCase{-1, {3, 1}}}) {
    cases.push_back({"split axis " + std::to_string(sc.axis) + " into " + std::to_string(sc.sizes.size()),
                     {x(550 + sc.axis)}, [sc](const std::vector<Var>& v) {
                       std::vector<Var> pieces = split(v[0], sc.sizes, sc.axis);
                       for (size_t i = 0; i < pieces.size(); ++i) pieces[i] = pieces[i] * (1.0f + 0.75f * i);
                       return concat(pieces, sc.axis);
                     }});
  }
  cases.push_back({"split, only the middle piece used", {x(560)},
                   [](const std::vector<Var>& v) { return split(v[0], {1, 2, 1}, 2)[1]; }});
  cases.push_back({"squeeze axis 1", {randn(Shape{2, 1, 4}, 570)},
                   [](const std::vector<Var>& v) { return squeeze(v[0], 1); }});
  cases.push_back({"squeeze an axis of size 3 (kept)", {x(571)},
                   [](const std::vector<Var>& v) { return squeeze(v[0], 1); }});
  cases.push_back({"unsqueeze -1", {x(572)}, [](const std::vector<Var>& v) { return unsqueeze(v[0], -1); }});
  cases.push_back({"unsqueeze 1", {x(573)}, [](const std::vector<Var>& v) { return unsqueeze(v[0], 1); }});
  cases.push_back({"flatten", {x(574)}, [](const std::vector<Var>& v) { return flatten(v[0]); }});
  cases.push_back({"flatten 1..2", {x(575)}, [](const std::vector<Var>& v) { return flatten(v[0], 1, 2); }});
  cases.push_back({"flatten 0..1", {x(576)}, [](const std::vector<Var>& v) { return flatten(v[0], 0, 1); }});
  check_cases(cases);
}

TEST_CASE("gradcheck: index_select, gather and embedding, with repeated indices") {
  std::vector<Case> cases = {
      {"index_select axis 0 {2, 0, 2, 2}", {randn(Shape{3, 4}, 600)},
       [](const std::vector<Var>& v) { return index_select(v[0], 0, {2, 0, 2, 2}); }},
      {"index_select axis 1 of rank 3 {1, 1, 3}", {randn(Shape{2, 4, 3}, 601)},
       [](const std::vector<Var>& v) { return index_select(v[0], 1, {1, 1, 3}); }},
      {"index_select axis -1 {0, 2, 0}", {randn(Shape{3, 4}, 602)},
       [](const std::vector<Var>& v) { return index_select(v[0], -1, {0, 2, 0}); }},
  };
  // gather along axis 0: index [5, 4] into x [3, 4]; along the last: [3, 6] into [3, 4].
  const Indices rows(Shape{5, 4}, {0, 2, 1, 1, 2, 2, 0, 1, 0, 0, 0, 2, 1, 2, 2, 0, 2, 1, 0, 2});
  const Indices cols(Shape{3, 6}, {3, 3, 0, 1, 3, 2, 0, 0, 0, 1, 2, 1, 2, 3, 1, 3, 2, 2});
  const Indices mid(Shape{2, 2, 3}, {1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0});
  cases.push_back({"gather axis 0", {randn(Shape{3, 4}, 610)},
                   [rows](const std::vector<Var>& v) { return gather(v[0], 0, rows); }});
  cases.push_back({"gather axis -1", {randn(Shape{3, 4}, 611)},
                   [cols](const std::vector<Var>& v) { return gather(v[0], -1, cols); }});
  cases.push_back({"gather axis 1 of rank 3", {randn(Shape{2, 2, 3}, 612)},
                   [mid](const std::vector<Var>& v) { return gather(v[0], 1, mid); }});
  // Row 3 of the weight is never used: its gradient must stay exactly zero.
  const Indices ids(Shape{2, 4}, {1, 4, 1, 0, 2, 1, 4, 4});
  const Indices ids1({0, 0, 2});
  cases.push_back({"embedding ids [2, 4]", {randn(Shape{5, 3}, 620)},
                   [ids](const std::vector<Var>& v) { return embedding(v[0], ids); }});
  cases.push_back({"embedding ids [3]", {randn(Shape{5, 3}, 621)},
                   [ids1](const std::vector<Var>& v) { return embedding(v[0], ids1); }});
  // topk on distinct values: the chosen positions cannot change under the step.
  cases.push_back({"topk k 2 axis -1", {distinct(Shape{3, 5}, 630)},
                   [](const std::vector<Var>& v) { return topk(v[0], 2, -1).values; }});
  cases.push_back({"topk k 3 smallest axis 1 of rank 3", {distinct(Shape{2, 4, 3}, 631)},
                   [](const std::vector<Var>& v) { return topk(v[0], 3, 1, false).values; }});
  cases.push_back({"topk k = the whole axis 0", {distinct(Shape{3, 2}, 632)},
                   [](const std::vector<Var>& v) { return topk(v[0], 3, 0).values; }});
  check_cases(cases);
}

TEST_CASE("gradcheck: softmax, log_softmax and cross_entropy") {
  std::vector<Case> cases;
  for (int axis : {0, 1, -1}) {
    const std::string tag = " axis " + std::to_string(axis);
    cases.push_back({"softmax" + tag, {randn(Shape{3, 5}, 700 + axis)},
                     [axis](const std::vector<Var>& v) { return softmax(v[0], axis); }});
    cases.push_back({"log_softmax" + tag, {randn(Shape{3, 5}, 710 + axis)},
                     [axis](const std::vector<Var>& v) { return log_softmax(v[0], axis); }});
  }
  cases.push_back({"softmax axis 1 of rank 3", {randn(Shape{2, 3, 4}, 720)},
                   [](const std::vector<Var>& v) { return softmax(v[0], 1); }});
  cases.push_back({"log_softmax axis 1 of rank 3", {randn(Shape{2, 3, 4}, 721)},
                   [](const std::vector<Var>& v) { return log_softmax(v[0], 1); }});

  const Indices plain({1, 0, 4, 1});
  const Indices with_ignored({1, -100, 4, -100});
  const Indices with_custom_ignore({1, 2, 4, 2});
  Tensor row_w = Tensor::from(Shape{4}, {1.0f, 0.0f, 2.0f, 0.5f});
  struct CeCase {
    const char* name;
    const Indices& targets;
    float smoothing;
    bool weighted, mean;
    int32_t ignore_index = -100;
  };
  const std::vector<CeCase> ce = {
      {"plain, mean", plain, 0.0f, false, true},
      {"plain, sum", plain, 0.0f, false, false},
      {"ignore_index -100, mean", with_ignored, 0.0f, false, true},
      {"ignore_index -100, sum", with_ignored, 0.0f, false, false},
      {"ignore_index 2, mean", with_custom_ignore, 0.0f, false, true, 2},
      {"label smoothing 0.1, mean", plain, 0.1f, false, true},
      {"label smoothing 0.2, sum", plain, 0.2f, false, false},
      {"label smoothing with ignore_index", with_ignored, 0.1f, false, true},
      {"row weights, mean", plain, 0.0f, true, true},
      {"row weights, sum", plain, 0.0f, true, false},
      {"row weights, ignore_index, smoothing", with_ignored, 0.1f, true, true},
  };
  uint64_t seed = 730;
  for (const CeCase& c : ce) {
    CrossEntropyOptions options;
    options.ignore_index = c.ignore_index;
    options.label_smoothing = c.smoothing;
    if (c.weighted) options.row_weights = row_w;
    options.mean = c.mean;
    cases.push_back({std::string("cross_entropy ") + c.name, {randn(Shape{4, 5}, seed++)},
                     [targets = c.targets, options](const std::vector<Var>& v) {
                       return cross_entropy(v[0], targets, options);
                     }});
  }
  check_cases(cases);
}

TEST_CASE("gradcheck: cross_entropy over [N, C, d1, ...] logits") {
  const Indices t3(Shape{2, 3}, {0, 3, 1, 2, -100, 0});
  const Indices t4(Shape{2, 2, 2}, {2, 0, 1, 1, 0, 2, -100, 1});
  Tensor w4 = Tensor::from(Shape{2, 2, 2}, {1.0f, 0.5f, 0.0f, 2.0f, 1.0f, 1.0f, 0.25f, 1.0f});
  CrossEntropyOptions smooth_sum;
  smooth_sum.label_smoothing = 0.1f;
  smooth_sum.row_weights = w4;
  smooth_sum.mean = false;
  std::vector<Case> cases = {
      {"cross_entropy [2, 4, 3]", {randn(Shape{2, 4, 3}, 740)},
       [t3](const std::vector<Var>& v) { return cross_entropy(v[0], t3); }},
      {"cross_entropy [2, 3, 2, 2], smoothing, weights, sum", {randn(Shape{2, 3, 2, 2}, 741)},
       [t4, smooth_sum](const std::vector<Var>& v) { return cross_entropy(v[0], t4, smooth_sum); }},
  };
  check_cases(cases);
}

TEST_CASE("gradcheck: losses, every reduction, gradients to input and target") {
  const Shape s{3, 5};
  const std::vector<std::pair<const char*, Reduction>> reductions = {
      {"mean", Reduction::Mean}, {"sum", Reduction::Sum}, {"none", Reduction::None}};
  std::vector<Case> cases;
  uint64_t seed = 750;
  for (const auto& [tag, r] : reductions) {
    const std::string name = std::string(", ") + tag;
    const Reduction red = r;
    cases.push_back({"mse_loss" + name, {randn(s, seed++), randn(s, seed++)},
                     [red](const std::vector<Var>& v) { return mse_loss(v[0], v[1], red); }});
    // Input on the 0.05-offset grid, target on the plain one: x − t is never
    // within 0.05 of 0 (l1's kink) or of ±0.5, ±1 (huber's δ).
    cases.push_back({"l1_loss" + name, {grid(s, seed++), grid(s, seed++, 0.0f)},
                     [red](const std::vector<Var>& v) { return l1_loss(v[0], v[1], red); }});
    cases.push_back({"huber_loss delta 1" + name, {grid(s, seed++), grid(s, seed++, 0.0f)},
                     [red](const std::vector<Var>& v) { return huber_loss(v[0], v[1], 1.0f, red); }});
    cases.push_back({"huber_loss delta 0.5" + name, {grid(s, seed++), grid(s, seed++, 0.0f)},
                     [red](const std::vector<Var>& v) { return huber_loss(v[0], v[1], 0.5f, red); }});
    Tensor soft = filled(s, seed++, [](Generator& g) { return g.uniform(); });
    cases.push_back({"binary_cross_entropy_with_logits" + name, {randn(s, seed++), soft},
                     [red](const std::vector<Var>& v) { return binary_cross_entropy_with_logits(v[0], v[1], red); }});
    Tensor pos = positive(Shape{5}, seed++);
    cases.push_back({"binary_cross_entropy_with_logits pos_weight [5]" + name, {randn(s, seed++), soft},
                     [red, pos](const std::vector<Var>& v) {
                       return binary_cross_entropy_with_logits(v[0], v[1], red, pos);
                     }});
    const Indices rows({1, -100, 4});
    const Indices positions(Shape{2, 3}, {0, 2, 3, 3, -100, 1});
    cases.push_back({"nll_loss [3, 5]" + name, {randn(s, seed++)},
                     [red, rows](const std::vector<Var>& v) { return nll_loss(v[0], rows, -100, red); }});
    cases.push_back({"nll_loss [2, 4, 3]" + name, {randn(Shape{2, 4, 3}, seed++)},
                     [red, positions](const std::vector<Var>& v) { return nll_loss(v[0], positions, -100, red); }});
  }
  cases.push_back({"mse_loss(x, x)", {randn(s, seed++)},
                   [](const std::vector<Var>& v) { return mse_loss(v[0], v[0]); }});
  check_cases(cases);
}

TEST_CASE("gradcheck: masked_fill and where") {
  const Shape s{3, 4};
  Tensor m_full = mask01(s, 800), m_row = mask01(Shape{4}, 801), m_col = mask01(Shape{3, 1}, 802);
  std::vector<Case> cases = {
      {"masked_fill mask [3, 4]", {randn(s, 810)},
       [m_full](const std::vector<Var>& v) { return masked_fill(v[0], m_full, -5.0f); }},
      {"masked_fill mask [4]", {randn(s, 811)},
       [m_row](const std::vector<Var>& v) { return masked_fill(v[0], m_row, 0.0f); }},
      {"masked_fill mask [3, 1]", {randn(s, 812)},
       [m_col](const std::vector<Var>& v) { return masked_fill(v[0], m_col, 2.0f); }},
      {"masked_fill -1e9 then softmax (attention)", {randn(s, 813)},
       [m_row](const std::vector<Var>& v) { return softmax(masked_fill(v[0], m_row, -1e9f), -1); }},
      {"where cond [3, 4]", {randn(s, 820), randn(s, 821)},
       [m_full](const std::vector<Var>& v) { return where(m_full, v[0], v[1]); }},
      {"where cond [4]", {randn(s, 822), randn(s, 823)},
       [m_row](const std::vector<Var>& v) { return where(m_row, v[0], v[1]); }},
      {"where cond [3, 1]", {randn(s, 824), randn(s, 825)},
       [m_col](const std::vector<Var>& v) { return where(m_col, v[0], v[1]); }},
      {"where(c, x, x)", {randn(s, 826)}, [m_full](const std::vector<Var>& v) { return where(m_full, v[0], v[0]); }},
  };
  check_cases(cases);
}

TEST_CASE("gradcheck: dropout and relu_dropout with a fixed mask, and identity in evaluation") {
  // A fresh generator with a fixed seed inside f: every call draws the same mask.
  std::vector<Case> cases;
  for (float p : {0.2f, 0.5f}) {
    cases.push_back({"dropout training p=" + std::to_string(p), {randn(Shape{4, 6}, 900)},
                     [p](const std::vector<Var>& v) {
                       Generator gen(42);
                       return dropout(v[0], p, true, gen);
                     }});
  }
  cases.push_back({"relu_dropout training p=0.3", {randn(Shape{4, 6}, 903)}, [](const std::vector<Var>& v) {
                     Generator gen(42);
                     return relu_dropout(v[0], 0.3f, true, gen);
                   }});
  cases.push_back({"dropout evaluation", {randn(Shape{4, 6}, 901)}, [](const std::vector<Var>& v) {
                     Generator gen(42);
                     return dropout(v[0], 0.5f, false, gen);
                   }});
  check_cases(cases);

  // Training: every element is either dropped or scaled by 1/(1-p).
  Tensor x = randn(Shape{4, 6}, 902);
  Generator gen(42);
  Tensor y = dropout(constant(x), 0.5f, true, gen).value();
  int dropped = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float got = y.data()[i], kept = 2.0f * x.data()[i];
    dropped += got == 0.0f;
    CHECK_MESSAGE((got == 0.0f || std::fabs(got - kept) <= 1e-6f * std::fabs(kept)), "element " << i);
  }
  CHECK(dropped > 0);
  CHECK(dropped < x.numel());
  // Evaluation: the values pass through unchanged.
  Tensor e = dropout(constant(x), 0.5f, false, gen).value();
  CHECK(max_abs_diff(e, x) == 0.0f);
}

namespace {

// y = x², recorded by hand with a backward that is `right` or off by a factor 2.
Var custom_square(const Var& x, bool right) {
  Tensor value = x.value().clone();
  for (float& e : value.span()) e *= e;
  return tape().record(right ? "square" : "wrong_square", value, {x}, [right](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float* xv = n.inputs[0]->value.data();
    const float* g = n.grad.data();
    const float factor = right ? 2.0f : 1.0f;  // d(x²)/dx = 2x; the wrong one uses 1x
    for (int64_t i = 0; i < dx->numel(); ++i) dx->data()[i] += factor * xv[i] * g[i];
  });
}

}  // namespace

TEST_CASE("gradcheck catches a deliberately wrong backward") {
  Tensor x = away_from_zero(Shape{3}, 1000);
  Tensor other = randn(Shape{3}, 1001);
  GradCheckResult r = gradcheck(
      [](const std::vector<Var>& v) { return add(v[0], custom_square(v[1], false)); }, {other, x});
  CHECK_FALSE(r.ok);
  INFO("report: " << r.report);
  CHECK(r.report.find("input 1") != std::string::npos);  // the input whose gradient is wrong
}

TEST_CASE("gradcheck passes the same custom op with the right backward") {
  Tensor x = away_from_zero(Shape{3}, 1000);
  GradCheckResult r = gradcheck([](const std::vector<Var>& v) { return custom_square(v[0], true); }, {x});
  CHECK_MESSAGE(r.ok, "square: " << r.report);
}
