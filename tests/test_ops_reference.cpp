// Every differentiable op of autograd/ops.h against PyTorch (values and gradients).
//
// tests/reference/ops.json is written by tests/reference/make_op_refs.py (any Python
// with torch: pip install torch); no Python is needed here. The file is
//
//   {"ops": [every op name the script covers],
//    "cases": [{"name", "op", "args", "inputs", "outputs", "r", "grads"}, ...]}
//
// where a tensor is {"shape": [...], "data": [flat, row-major]}. `op` names an entry
// of the table below (add_scalar is add(Var, float), sum_all is sum(x), ...), `args`
// holds everything that is not a differentiable float input (axes, flags, scalars,
// integer indices, masks, row weights), `inputs` are the float inputs in argument
// order, `outputs` the forward result(s) (several only for split), `r` one fixed
// projection per output and `grads` the gradients of Σ_k sum(outputs[k] · r[k])
// with respect to every input. For each case we run the op on parameters holding
// the inputs, compare the outputs, seed backward with r, compare the gradients and
// clear the tape. Dropout is random and tested elsewhere; the ops that return
// integers (argmax, argmin, topk's indices) and multinomial's draws are checked
// directly at the end of this file.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;
using nlohmann::json;

namespace {

using Vars = std::vector<Var>;
using OpFn = std::function<Vars(const Vars& x, const json& args)>;

Indices indices_from_json(const json& j) {
  return Indices(Shape(j.at("shape").get<std::vector<int64_t>>()), j.at("data").get<std::vector<int32_t>>());
}

Var reduce(Var (*f)(const Var&, int, bool), const Var& x, const json& a) {
  return f(x, a.at("axis").get<int>(), a.at("keepdim").get<bool>());
}

Var reduce_axes(Var (*f)(const Var&, const std::vector<int>&, bool), const Var& x, const json& a) {
  return f(x, a.at("axes").get<std::vector<int>>(), a.at("keepdim").get<bool>());
}

// var and std, over one axis ("axis") or several ("axes").
using SpreadAxis = Var (*)(const Var&, int, int, bool);
using SpreadAxes = Var (*)(const Var&, const std::vector<int>&, int, bool);
Var spread(SpreadAxis one, SpreadAxes several, const Var& x, const json& a) {
  const int correction = a.at("correction").get<int>();
  const bool keepdim = a.at("keepdim").get<bool>();
  if (a.contains("axes")) return several(x, a.at("axes").get<std::vector<int>>(), correction, keepdim);
  return one(x, a.at("axis").get<int>(), correction, keepdim);
}

Reduction reduction_from(const json& a) {
  const std::string r = a.at("reduction").get<std::string>();
  REQUIRE_MESSAGE((r == "mean" || r == "sum" || r == "none"), "unknown reduction " << r);
  return r == "mean" ? Reduction::Mean : r == "sum" ? Reduction::Sum : Reduction::None;
}

CrossEntropyOptions ce_options(const json& a) {
  CrossEntropyOptions o;
  o.ignore_index = a.at("ignore_index").get<int32_t>();
  o.label_smoothing = a.at("label_smoothing").get<float>();
  o.mean = a.at("mean").get<bool>();
  if (a.contains("row_weights")) o.row_weights = test::tensor_from_json(a.at("row_weights"));
  return o;
}

// Op name (as in ops.json) → a call of the rg:: function with the case's args.
const std::map<std::string, OpFn>& op_table() {
  static const std::map<std::string, OpFn> table = {
      // elementwise binary, broadcasting
      {"add", [](const Vars& x, const json&) -> Vars { return {add(x[0], x[1])}; }},
      {"sub", [](const Vars& x, const json&) -> Vars { return {sub(x[0], x[1])}; }},
      {"mul", [](const Vars& x, const json&) -> Vars { return {mul(x[0], x[1])}; }},
      {"div", [](const Vars& x, const json&) -> Vars { return {div(x[0], x[1])}; }},
      {"maximum", [](const Vars& x, const json&) -> Vars { return {maximum(x[0], x[1])}; }},
      {"add_scalar", [](const Vars& x, const json& a) -> Vars { return {add(x[0], a.at("s").get<float>())}; }},
      {"mul_scalar", [](const Vars& x, const json& a) -> Vars { return {mul(x[0], a.at("s").get<float>())}; }},
      // elementwise unary
      {"neg", [](const Vars& x, const json&) -> Vars { return {neg(x[0])}; }},
      {"exp", [](const Vars& x, const json&) -> Vars { return {rg::exp(x[0])}; }},
      {"log", [](const Vars& x, const json&) -> Vars { return {rg::log(x[0])}; }},
      {"tanh", [](const Vars& x, const json&) -> Vars { return {rg::tanh(x[0])}; }},
      {"sigmoid", [](const Vars& x, const json&) -> Vars { return {sigmoid(x[0])}; }},
      {"relu", [](const Vars& x, const json&) -> Vars { return {relu(x[0])}; }},
      {"leaky_relu",
       [](const Vars& x, const json& a) -> Vars { return {leaky_relu(x[0], a.at("slope").get<float>())}; }},
      {"sqrt", [](const Vars& x, const json&) -> Vars { return {rg::sqrt(x[0])}; }},
      {"rsqrt", [](const Vars& x, const json&) -> Vars { return {rsqrt(x[0])}; }},
      {"square", [](const Vars& x, const json&) -> Vars { return {square(x[0])}; }},
      {"abs", [](const Vars& x, const json&) -> Vars { return {rg::abs(x[0])}; }},
      {"clamp",
       [](const Vars& x, const json& a) -> Vars {
         return {clamp(x[0], a.at("lo").get<float>(), a.at("hi").get<float>())};
       }},
      {"scalar_sub", [](const Vars& x, const json& a) -> Vars { return {scalar_sub(a.at("s").get<float>(), x[0])}; }},
      {"gelu",
       [](const Vars& x, const json& a) -> Vars {
         return {gelu(x[0], a.at("approximate") == "tanh" ? GeluApprox::Tanh : GeluApprox::None)};
       }},
      {"silu", [](const Vars& x, const json&) -> Vars { return {silu(x[0])}; }},
      {"swiglu", [](const Vars& x, const json&) -> Vars { return {swiglu(x[0], x[1])}; }},
      {"softplus",
       [](const Vars& x, const json& a) -> Vars {
         return {softplus(x[0], a.at("beta").get<float>(), a.at("threshold").get<float>())};
       }},
      {"pow", [](const Vars& x, const json& a) -> Vars { return {rg::pow(x[0], a.at("exponent").get<float>())}; }},
      // reductions
      {"sum_all", [](const Vars& x, const json&) -> Vars { return {sum(x[0])}; }},
      {"mean_all", [](const Vars& x, const json&) -> Vars { return {mean(x[0])}; }},
      {"sum", [](const Vars& x, const json& a) -> Vars { return {reduce(sum, x[0], a)}; }},
      {"mean", [](const Vars& x, const json& a) -> Vars { return {reduce(mean, x[0], a)}; }},
      {"sum_axes", [](const Vars& x, const json& a) -> Vars { return {reduce_axes(sum, x[0], a)}; }},
      {"mean_axes", [](const Vars& x, const json& a) -> Vars { return {reduce_axes(mean, x[0], a)}; }},
      {"var", [](const Vars& x, const json& a) -> Vars { return {spread(var, var, x[0], a)}; }},
      {"var_axes", [](const Vars& x, const json& a) -> Vars { return {spread(var, var, x[0], a)}; }},
      {"std", [](const Vars& x, const json& a) -> Vars { return {spread(rg::std, rg::std, x[0], a)}; }},
      {"std_axes", [](const Vars& x, const json& a) -> Vars { return {spread(rg::std, rg::std, x[0], a)}; }},
      {"max", [](const Vars& x, const json& a) -> Vars { return {reduce(rg::max, x[0], a)}; }},
      {"min", [](const Vars& x, const json& a) -> Vars { return {reduce(rg::min, x[0], a)}; }},
      {"max_all", [](const Vars& x, const json&) -> Vars { return {rg::max(x[0])}; }},
      {"min_all", [](const Vars& x, const json&) -> Vars { return {rg::min(x[0])}; }},
      // matrix products
      {"matmul",
       [](const Vars& x, const json& a) -> Vars {
         return {matmul(x[0], x[1], a.at("trans_a").get<bool>(), a.at("trans_b").get<bool>())};
       }},
      // shapes
      {"reshape",
       [](const Vars& x, const json& a) -> Vars { return {reshape(x[0], a.at("dims").get<std::vector<int64_t>>())}; }},
      {"transpose",
       [](const Vars& x, const json& a) -> Vars {
         return {transpose(x[0], a.at("axis0").get<int>(), a.at("axis1").get<int>())};
       }},
      {"permute",
       [](const Vars& x, const json& a) -> Vars { return {permute(x[0], a.at("order").get<std::vector<int>>())}; }},
      {"concat", [](const Vars& x, const json& a) -> Vars { return {concat(x, a.at("axis").get<int>())}; }},
      {"stack", [](const Vars& x, const json& a) -> Vars { return {stack(x, a.at("axis").get<int>())}; }},
      {"split",
       [](const Vars& x, const json& a) -> Vars {
         return split(x[0], a.at("sizes").get<std::vector<int64_t>>(), a.at("axis").get<int>());
       }},
      {"slice",
       [](const Vars& x, const json& a) -> Vars {
         return {slice(x[0], a.at("axis").get<int>(), a.at("start").get<int64_t>(), a.at("end").get<int64_t>())};
       }},
      {"squeeze", [](const Vars& x, const json& a) -> Vars { return {squeeze(x[0], a.at("axis").get<int>())}; }},
      {"unsqueeze", [](const Vars& x, const json& a) -> Vars { return {unsqueeze(x[0], a.at("axis").get<int>())}; }},
      {"flatten",
       [](const Vars& x, const json& a) -> Vars {
         return {flatten(x[0], a.at("start_axis").get<int>(), a.at("end_axis").get<int>())};
       }},
      // indexing
      {"index_select",
       [](const Vars& x, const json& a) -> Vars {
         return {index_select(x[0], a.at("axis").get<int>(), a.at("index").get<std::vector<int32_t>>())};
       }},
      {"gather",
       [](const Vars& x, const json& a) -> Vars {
         return {gather(x[0], a.at("axis").get<int>(), indices_from_json(a.at("index")))};
       }},
      {"embedding",
       [](const Vars& x, const json& a) -> Vars { return {embedding(x[0], indices_from_json(a.at("ids")))}; }},
      {"topk",
       [](const Vars& x, const json& a) -> Vars {
         return {topk(x[0], a.at("k").get<int64_t>(), a.at("axis").get<int>(), a.at("largest").get<bool>()).values};
       }},
      // softmax and cross-entropy
      {"softmax", [](const Vars& x, const json& a) -> Vars { return {softmax(x[0], a.at("axis").get<int>())}; }},
      {"log_softmax",
       [](const Vars& x, const json& a) -> Vars { return {log_softmax(x[0], a.at("axis").get<int>())}; }},
      {"cross_entropy",
       [](const Vars& x, const json& a) -> Vars {
         return {cross_entropy(x[0], indices_from_json(a.at("targets")), ce_options(a))};
       }},
      // losses
      {"mse_loss", [](const Vars& x, const json& a) -> Vars { return {mse_loss(x[0], x[1], reduction_from(a))}; }},
      {"l1_loss", [](const Vars& x, const json& a) -> Vars { return {l1_loss(x[0], x[1], reduction_from(a))}; }},
      {"huber_loss",
       [](const Vars& x, const json& a) -> Vars {
         return {huber_loss(x[0], x[1], a.at("delta").get<float>(), reduction_from(a))};
       }},
      {"nll_loss",
       [](const Vars& x, const json& a) -> Vars {
         return {nll_loss(x[0], indices_from_json(a.at("targets")), a.at("ignore_index").get<int32_t>(),
                          reduction_from(a))};
       }},
      {"binary_cross_entropy_with_logits",
       [](const Vars& x, const json& a) -> Vars {
         Tensor pos_weight = a.contains("pos_weight") ? test::tensor_from_json(a.at("pos_weight")) : Tensor();
         return {binary_cross_entropy_with_logits(x[0], x[1], reduction_from(a), pos_weight)};
       }},
      // masks
      {"masked_fill",
       [](const Vars& x, const json& a) -> Vars {
         return {masked_fill(x[0], test::tensor_from_json(a.at("mask")), a.at("value").get<float>())};
       }},
      {"where",
       [](const Vars& x, const json& a) -> Vars { return {where(test::tensor_from_json(a.at("cond")), x[0], x[1])}; }},
  };
  return table;
}

// Tolerance |got − want| ≤ 1e-5 + 1e-4·|want|. The reference is evaluated in
// float64 on the exact float32 inputs and rounded once, so it is within half an
// ulp of the truth and the tolerance only has to cover our float32 error:
// a few ulps (~1e-7 relative) for elementwise ops on values of order 1, and
// ≈ √L·ε·|partial sums| ≲ 1e-6 absolute for reductions and products over L
// terms of order 1, even when the result cancels near 0 (L ≤ 303 here:
// sum_all_long, mean_all_long, the 150-long axes, matmul K = 64). The largest
// error measured on the first implementation was 4% of this tolerance
// (matmul_long_k, 4e-7), while a wrong formula is off by 1e-3 or more; so no
// case gets a wider atol. gelu, silu, softplus, pow, the reductions over
// several axes, var, std, min, topk and the losses all pass at a hundredth of
// this tolerance, except gelu's tanh form, whose fast sigmoid (3e-7 absolute,
// core/fast_math.h) takes 2% of it. var and std keep their mean in double, so
// values of order 100 (var_offset_mean), whose float mean would be off by
// 4e-6, lose nothing in x − mean.
constexpr float kRtol = 1e-4f;
constexpr float kAtol = 1e-5f;

// Seeds d/d(outputs[k]) = r[k] for every output and runs the tape once. The
// extra outputs (split) get their seed added straight into their gradient
// buffer: backward visits every node a gradient reached, so one pass serves all.
void backward_from(Vars& outs, const std::vector<Tensor>& r) {
  for (size_t k = 0; k + 1 < outs.size(); ++k) outs[k].grad().add_(r[k]);
  tape().backward(outs.back(), r.back());
}

// Runs one case twice on the same parameters. Pass 1 starts from no gradient
// (the kernels' write-instead-of-add path); pass 2 must ADD to it, so the
// gradients end at 2·grads (the accumulate rule of autograd/var.h). Every
// mismatch is a FAIL_CHECK naming the case, the pass, the tensor and the element.
void run_case(const json& c, const OpFn& op) {
  const std::string name = c.at("name").get<std::string>();
  std::vector<Tensor> originals;
  Vars inputs;
  for (const json& t : c.at("inputs")) {
    originals.push_back(test::tensor_from_json(t));
    inputs.push_back(parameter(originals.back().clone()));
  }
  std::vector<Tensor> r;
  for (const json& t : c.at("r")) r.push_back(test::tensor_from_json(t));
  const json& want_outs = c.at("outputs");
  const json& want_grads = c.at("grads");

  for (int pass = 1; pass <= 2; ++pass) {
    const std::string where = "case " + name + " (pass " + std::to_string(pass) + "), ";
    Vars outs = op(inputs, c.at("args"));
    if (outs.size() != want_outs.size()) {
      FAIL_CHECK(where << outs.size() << " outputs, expected " << want_outs.size());
      return;
    }
    for (size_t k = 0; k < outs.size(); ++k)
      test::all_close(outs[k].value(), test::tensor_from_json(want_outs[k]), kAtol, kRtol,
                      where + "output " + std::to_string(k));

    backward_from(outs, r);
    tape().clear();
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor got = inputs[i].has_grad() ? inputs[i].grad() : Tensor::zeros(inputs[i].shape());
      Tensor want = test::tensor_from_json(want_grads[i]);
      if (pass == 2) want.add_(want.clone());
      test::all_close(got, want, kAtol * pass, kRtol, where + "grad of input " + std::to_string(i));
      test::all_close(inputs[i].value(), originals[i], 0.0f, 0.0f,
                      where + "input " + std::to_string(i) + " modified by the op");
    }
  }
}

}  // namespace

TEST_CASE("every op of ops.h matches PyTorch, values and gradients") {
  const json ref = test::load_reference("ops.json");
  const auto& table = op_table();
  std::map<std::string, int> runs;
  for (const json& c : ref.at("cases")) {
    const std::string name = c.at("name").get<std::string>(), op = c.at("op").get<std::string>();
    auto it = table.find(op);
    if (it == table.end()) {
      FAIL_CHECK("case " << name << ": op '" << op << "' is not in the test's table");
      continue;
    }
    try {
      run_case(c, it->second);
      ++runs[op];
    } catch (const std::exception& e) {
      FAIL_CHECK("case " << name << " threw: " << std::string(e.what()));
    }
    tape().clear();
  }
  MESSAGE(ref.at("cases").size() << " reference cases");
  // Every op of ops.h but dropout and relu_dropout (random) is in the table, and every entry ran.
  for (const auto& [op, fn] : table) CHECK_MESSAGE(runs[op] > 0, "op '" << op << "' has no case that ran");
  const auto listed = ref.at("ops").get<std::set<std::string>>();
  for (const auto& [op, fn] : table) CHECK_MESSAGE(listed.count(op) == 1, "op '" << op << "' not listed in ops.json");
  for (const std::string& op : listed) CHECK_MESSAGE(table.count(op) == 1, "ops.json lists '" << op << "', unknown here");
}

// ---- The ops that return integers or random draws, checked directly ----

TEST_CASE("argmax and argmin: the first extreme along the axis, NaN before any number") {
  Var x = constant(Tensor::from(Shape{2, 4}, {3, 1, 3, 0, -1, 5, 5, 2}));
  CHECK(argmax(x, 1).values == std::vector<int32_t>{0, 1});  // ties: the first
  CHECK(argmin(x, 1).values == std::vector<int32_t>{3, 0});
  CHECK(argmax(x, 0).values == std::vector<int32_t>{0, 1, 1, 1});
  CHECK(argmin(x, -2).values == std::vector<int32_t>{1, 0, 0, 0});
  CHECK(argmax(x, 1).shape == Shape{2});
  CHECK(argmin(x, 0, true).shape == Shape{1, 4});
  Var with_nan = constant(Tensor::from(Shape{4}, {1.0f, NAN, 3.0f, NAN}));
  CHECK(argmax(with_nan, 0).values == std::vector<int32_t>{1});
  CHECK(argmin(with_nan, 0).values == std::vector<int32_t>{1});
  CHECK(std::isnan(rg::max(with_nan, 0).item()));
  CHECK(std::isnan(rg::min(with_nan).item()));
  // They are the positions max and min take their values (and send their gradients) from.
  Generator gen(5);
  Var r = constant(normal(Shape{3, 4, 5}, 0.0f, 1.0f, gen));
  for (int axis : {0, 1, 2, -1}) {
    CAPTURE(axis);
    CHECK(max_abs_diff(gather(r, axis, argmax(r, axis, true)).value(), rg::max(r, axis, true).value()) == 0.0f);
    CHECK(max_abs_diff(gather(r, axis, argmin(r, axis, true)).value(), rg::min(r, axis, true).value()) == 0.0f);
  }
  CHECK_THROWS_WITH_AS(argmax(x, 2), "argmax: axis 2 is out of range for [2, 4]", Error);
  CHECK_THROWS_WITH_AS(argmin(constant(Tensor::scalar(1.0f)), 0), "argmin: cannot reduce an axis of a scalar", Error);
  CHECK_THROWS_WITH_AS(argmax(constant(Tensor::zeros(Shape{2, 0})), 1), "argmax: axis 1 of [2, 0] is empty", Error);
}

TEST_CASE("topk's indices: sorted, equal values by position, NaN as the largest") {
  Var x = constant(Tensor::from(Shape{2, 5}, {0.5f, 2, -1, 2, 0, 3, 3, 3, 1, NAN}));
  TopK top = topk(x, 3);
  CHECK(top.indices.shape == Shape{2, 3});
  CHECK(top.indices.values == std::vector<int32_t>{1, 3, 0, 4, 0, 1});
  CHECK(top.values.value().data()[0] == 2.0f);
  CHECK(std::isnan(top.values.value().data()[3]));
  TopK low = topk(x, 2, 1, false);  // smallest first; NaN comes last
  CHECK(low.indices.values == std::vector<int32_t>{2, 4, 3, 0});
  CHECK(topk(x, 0).indices.shape == Shape{2, 0});

  // On random values, along either axis of [6, 7]: the values are x at the
  // indices, in order, and no value left out beats the last one taken.
  Generator gen(9);
  Tensor r = normal(Shape{6, 7}, 0.0f, 1.0f, gen);
  for (int axis : {0, 1}) {
    for (bool largest : {true, false}) {
      CAPTURE(axis);
      CAPTURE(largest);
      const int64_t k = 3, len = r.dim(axis), lines = r.dim(1 - axis);
      TopK t = topk(constant(r), k, axis, largest);
      CHECK(max_abs_diff(gather(constant(r), axis, t.indices).value(), t.values.value()) == 0.0f);
      auto at = [&](const Tensor& m, int64_t line, int64_t j) {  // element j along the axis of line `line`
        return axis == 1 ? m.data()[line * m.dim(1) + j] : m.data()[j * m.dim(1) + line];
      };
      auto before = [largest](float a, float b) { return largest ? a >= b : a <= b; };
      for (int64_t line = 0; line < lines; ++line) {
        std::set<int32_t> taken;
        for (int64_t j = 0; j < k; ++j) {
          const int32_t index = t.indices.values[axis == 1 ? line * k + j : j * lines + line];
          taken.insert(index);
          if (j > 0) CHECK(before(at(t.values.value(), line, j - 1), at(t.values.value(), line, j)));
        }
        CHECK(taken.size() == static_cast<size_t>(k));
        const float last = at(t.values.value(), line, k - 1);
        for (int64_t j = 0; j < len; ++j)
          if (!taken.count(static_cast<int32_t>(j))) CHECK(before(last, at(r, line, j)));
      }
    }
  }
  CHECK_THROWS_WITH_AS(topk(x, 6), "topk: k = 6 is not in [0, 5] for axis -1 of [2, 5]", Error);
  CHECK_THROWS_WITH_AS(topk(x, -1), "topk: k = -1 is not in [0, 5] for axis -1 of [2, 5]", Error);
  CHECK_THROWS_WITH_AS(topk(x, 1, 2), "topk: axis 2 is out of range for [2, 5]", Error);
  CHECK_THROWS_WITH_AS(topk(constant(Tensor::scalar(1.0f)), 1), "topk: cannot pick along an axis of a scalar", Error);
}

// Counts of category c over n independent draws are Binomial(n, p_c): mean
// n·p_c, standard deviation √(n·p_c·(1 − p_c)); with n·p_c ≥ 1,000 here the
// normal approximation holds. A correct sampler lands within 5 standard
// deviations with probability 1 − 6e-7 per count, so the 19 counts below all
// pass for all but about one seed in 90,000 (a union bound); the seeds are
// fixed, so the test is deterministic (measured: |z| ≤ 2.4). A sampler off by
// one category or by a wrong normalisation misses by dozens of deviations.
namespace {

void check_count(int64_t count, int64_t n, double p, const std::string& what) {
  const double sd = std::sqrt(n * p * (1.0 - p));
  CHECK_MESSAGE(std::fabs(count - n * p) <= 5.0 * sd,
                what << ": " << count << " draws, expected " << n * p << " ± 5·" << sd);
}

}  // namespace

TEST_CASE("multinomial with replacement draws each category in proportion to its weight") {
  const int64_t n = 100000;
  // Row 0 sums to 1; row 1 is unnormalised and has zero weights, never drawn.
  const std::vector<float> w = {0.1f, 0.2f, 0.3f, 0.4f, 0.0f, 5.0f, 0.0f, 0.0f, 1.0f, 2.0f};
  Generator gen(11);
  Indices drawn = multinomial(Tensor::from(Shape{2, 5}, w), n, true, gen);
  REQUIRE(drawn.shape == Shape{2, n});
  CHECK(gen.offset() == static_cast<uint64_t>(2 * n));  // one draw per sample
  for (int64_t row = 0; row < 2; ++row) {
    std::vector<int64_t> counts(5, 0);
    int64_t out_of_range = 0;
    for (int64_t s = 0; s < n; ++s) {
      const int32_t c = drawn.values[row * n + s];
      if (c >= 0 && c < 5)
        ++counts[c];
      else
        ++out_of_range;
    }
    CHECK(out_of_range == 0);
    const double total = w[row * 5] + w[row * 5 + 1] + w[row * 5 + 2] + w[row * 5 + 3] + w[row * 5 + 4];
    for (int c = 0; c < 5; ++c) {
      const double p = w[row * 5 + c] / total;
      if (p == 0.0)
        CHECK_MESSAGE(counts[c] == 0, "row " << row << " drew category " << c << " of weight 0");
      else
        check_count(counts[c], n, p, "row " + std::to_string(row) + " category " + std::to_string(c));
    }
  }
  // A 1-d probs gives 1-d draws; the same seed, the same draws.
  Generator a(3), b(3);
  Indices one = multinomial(Tensor::from(Shape{3}, {1.0f, 1.0f, 2.0f}), 7, true, a);
  CHECK(one.shape == Shape{7});
  CHECK(one.values == multinomial(Tensor::from(Shape{3}, {1.0f, 1.0f, 2.0f}), 7, true, b).values);
}

TEST_CASE("multinomial without replacement draws in sequence, each category at most once") {
  // Weights 1..4 over 4 categories; two draws per row. Drawn in sequence, the
  // ordered pair (i, j) has probability p_i · p_j / (1 − p_i); 50,000 rows.
  const int64_t rows = 50000, classes = 4;
  std::vector<float> w(rows * classes);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < classes; ++c) w[r * classes + c] = static_cast<float>(c + 1);
  Generator gen(13);
  Indices drawn = multinomial(Tensor::from(Shape{rows, classes}, w), 2, false, gen);
  REQUIRE(drawn.shape == Shape{rows, 2});
  CHECK(gen.offset() == static_cast<uint64_t>(rows * classes));  // one exponential per category
  std::vector<int64_t> pairs(classes * classes, 0);
  int64_t invalid = 0;  // out of range, or the same category twice
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t i = drawn.values[2 * r], j = drawn.values[2 * r + 1];
    if (i >= 0 && i < classes && j >= 0 && j < classes && i != j)
      ++pairs[i * classes + j];
    else
      ++invalid;
  }
  CHECK(invalid == 0);
  for (int i = 0; i < classes; ++i)
    for (int j = 0; j < classes; ++j)
      if (i != j) {
        const double pi = (i + 1) / 10.0, pj = (j + 1) / 10.0;
        check_count(pairs[i * classes + j], rows, pi * pj / (1.0 - pi),
                    "pair " + std::to_string(i) + std::to_string(j));
      }
  // All of them: a permutation. Zero weights are never drawn.
  Generator g2(17);
  std::vector<int32_t> all = multinomial(Tensor::from(Shape{5}, {1, 2, 3, 4, 5}), 5, false, g2).values;
  std::sort(all.begin(), all.end());
  CHECK(all == std::vector<int32_t>{0, 1, 2, 3, 4});
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<int32_t> two = multinomial(Tensor::from(Shape{3}, {0.5f, 0.0f, 0.5f}), 2, false, g2).values;
    std::sort(two.begin(), two.end());
    CHECK(two == std::vector<int32_t>{0, 2});
  }
}

TEST_CASE("multinomial refuses what is not a distribution") {
  Generator gen(1);
  auto draw = [&gen](Shape s, std::vector<float> w, int64_t samples, bool replacement) {
    return multinomial(Tensor::from(s, w), samples, replacement, gen);
  };
  CHECK_THROWS_WITH_AS(draw(Shape{2, 2}, {0.5f, 0.5f, -0.1f, 1.0f}, 1, true),
                       "multinomial: weight -0.1 at [1, 0] of probs [2, 2] is negative or not finite", Error);
  CHECK_THROWS_AS(draw(Shape{2}, {NAN, 1.0f}, 1, true), Error);
  CHECK_THROWS_AS(draw(Shape{2}, {INFINITY, 1.0f}, 1, true), Error);
  CHECK_THROWS_WITH_AS(draw(Shape{2, 2}, {1.0f, 0.0f, 0.0f, 0.0f}, 1, true),
                       "multinomial: row 1 of probs [2, 2] is all zeros", Error);
  CHECK_THROWS_WITH_AS(draw(Shape{3}, {1.0f, 1.0f, 1.0f}, 4, false),
                       "multinomial: cannot draw 4 samples without replacement from 3 categories", Error);
  CHECK_THROWS_WITH_AS(draw(Shape{3}, {1.0f, 0.0f, 1.0f}, 3, false),
                       "multinomial: row 0 of probs [3] has 2 non-zero weights, too few to draw 3 without replacement",
                       Error);
  CHECK_THROWS_WITH_AS(draw(Shape{3}, {1.0f, 1.0f, 1.0f}, 0, true),
                       "multinomial: the number of samples must be positive, got 0", Error);
  CHECK_THROWS_WITH_AS(draw(Shape{1, 1, 2}, {1.0f, 1.0f}, 1, true),
                       "multinomial: probs must be [C] or [N, C], got [1, 1, 2]", Error);
}

TEST_CASE("an empty axis list reduces every axis, written {} or as a vector") {
  Generator gen(21);
  Var x = constant(normal(Shape{2, 3, 4}, 0.0f, 1.0f, gen));
  // {} would be axis 0 if it reached the int overloads; it reaches the lists.
  CHECK(sum(x, {}).shape() == Shape{});
  CHECK(sum(x, {}).item() == doctest::Approx(sum(x).item()).epsilon(1e-6));
  CHECK(mean(x, {}, true).shape() == Shape{1, 1, 1});
  CHECK(var(x, {}, 0).item() == doctest::Approx(var(x, std::vector<int>{0, 1, 2}, 0).item()).epsilon(1e-6));
  CHECK(rg::std(x, std::vector<int>{}).item() ==
        doctest::Approx(rg::std(reshape(x, {24}), 0).item()).epsilon(1e-6));
}

TEST_CASE("the new ops refuse bad arguments with one error naming the op and the shapes") {
  Var x = parameter(Tensor::ones(Shape{2, 3}));
  CHECK_THROWS_WITH_AS(sum(x, {0, 0}), "sum: axis 0 is listed twice for [2, 3]", Error);
  CHECK_THROWS_WITH_AS(mean(x, {0, 2}), "mean: axis 2 is out of range for [2, 3]", Error);
  CHECK_THROWS_WITH_AS(var(x, 0, 2),
                       "var: correction 2 leaves no degrees of freedom for 2 elements per result of [2, 3]", Error);
  CHECK_THROWS_WITH_AS(rg::std(x, {-3}), "std: axis -3 is out of range for [2, 3]", Error);
  CHECK_THROWS_WITH_AS(rg::min(x, 2), "min: axis 2 is out of range for [2, 3]", Error);
  CHECK_THROWS_WITH_AS(rg::max(parameter(Tensor::zeros(Shape{0}))), "max: [0] has no elements", Error);
  CHECK_THROWS_WITH_AS(softplus(x, 0.0f), "softplus: beta must be finite and non-zero, got 0", Error);
  CHECK_THROWS_WITH_AS(squeeze(x, 2), "squeeze: axis 2 is out of range for [2, 3]", Error);
  CHECK_THROWS_WITH_AS(unsqueeze(x, 3), "unsqueeze: axis 3 is out of range for [2, 3] (the result has 3 axes)", Error);
  CHECK_THROWS_WITH_AS(flatten(x, 1, 0), "flatten: start axis 1 comes after end axis 0 in [2, 3]", Error);
  CHECK_THROWS_WITH_AS(mse_loss(x, parameter(Tensor::ones(Shape{3}))),
                       "mse_loss: input [2, 3] and target [3] must have the same shape", Error);
  CHECK_THROWS_WITH_AS(huber_loss(x, x, 0.0f), "huber_loss: delta must be positive, got 0", Error);
  CHECK_THROWS_WITH_AS(nll_loss(x, Indices({0, 1, 2})),
                       "nll_loss: targets [3] must be [N, d1, ...] = [2] for log_probs [2, 3]", Error);
  CHECK_THROWS_WITH_AS(nll_loss(x, Indices({0, 3})), "nll_loss: target 3 at position 1 is out of range [0, 3)", Error);
  CHECK_THROWS_WITH_AS(
      binary_cross_entropy_with_logits(x, x, Reduction::Mean, Tensor::ones(Shape{2})),
      "binary_cross_entropy_with_logits: pos_weight [2] does not broadcast to the logits' shape [2, 3]", Error);
  Var logits = parameter(Tensor::zeros(Shape{2, 4, 3}));
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Indices(Shape{2, 4}, std::vector<int32_t>(8, 0))),
                       "cross_entropy: targets [2, 4] must be [N, d1, ...] = [2, 3] for logits [2, 4, 3]", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(parameter(Tensor::zeros(Shape{4})), Indices({0})),
                       "cross_entropy: logits must be [N, C] or [N, C, d1, ...], got [4]", Error);
  // An N-D target out of range is reported at its flat position among the rows.
  CHECK_THROWS_WITH_AS(cross_entropy(logits, Indices(Shape{2, 3}, {0, 1, 2, 3, 4, 0})),
                       "cross_entropy: target 4 at row 4 is out of range [0, 4)", Error);
}
