// Every differentiable op of autograd/ops.h against PyTorch (values and gradients).
//
// tests/reference/ops.json is written by tests/reference/make_op_refs.py (Debian's
// python3-torch); no Python is needed here. The file is
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
// clear the tape. Dropout is random and tested elsewhere.
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
      // reductions
      {"sum_all", [](const Vars& x, const json&) -> Vars { return {sum(x[0])}; }},
      {"mean_all", [](const Vars& x, const json&) -> Vars { return {mean(x[0])}; }},
      {"sum", [](const Vars& x, const json& a) -> Vars { return {reduce(sum, x[0], a)}; }},
      {"mean", [](const Vars& x, const json& a) -> Vars { return {reduce(mean, x[0], a)}; }},
      {"max", [](const Vars& x, const json& a) -> Vars { return {reduce(rg::max, x[0], a)}; }},
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
      // softmax and losses
      {"softmax", [](const Vars& x, const json& a) -> Vars { return {softmax(x[0], a.at("axis").get<int>())}; }},
      {"log_softmax",
       [](const Vars& x, const json& a) -> Vars { return {log_softmax(x[0], a.at("axis").get<int>())}; }},
      {"cross_entropy",
       [](const Vars& x, const json& a) -> Vars {
         return {cross_entropy(x[0], indices_from_json(a.at("targets")), ce_options(a))};
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
// case gets a wider atol.
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
  // Every op of ops.h but dropout is in the table, and every table entry ran.
  for (const auto& [op, fn] : table) CHECK_MESSAGE(runs[op] > 0, "op '" << op << "' has no case that ran");
  const auto listed = ref.at("ops").get<std::set<std::string>>();
  for (const auto& [op, fn] : table) CHECK_MESSAGE(listed.count(op) == 1, "op '" << op << "' not listed in ops.json");
  for (const std::string& op : listed) CHECK_MESSAGE(table.count(op) == 1, "ops.json lists '" << op << "', unknown here");
}
