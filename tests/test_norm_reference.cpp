// Every normalization against PyTorch reference values (tests/reference/norms.json,
// written by tests/reference/make_norm_refs.py; see that script), and GroupNorm:
// against torch.nn.GroupNorm, gradient checks, its layer and its errors.
//
// JSON format:
//   {"torch": version,
//    "inputs": {set: {"x": T, "r": T[, "x2": T]}},   shared by the cases of one set
//    "cases": [{"name", "kind" (layernorm|rmsnorm|prmsnorm|l2norm|batchnorm), "input" (set),
//               "layout" (features|channels), "eps", "eps_inside", "p", "k", "momentum",
//               "training", "gain", ["bias"], "out", "grad_x", "grad_gain", ["grad_bias"],
//               batchnorm: ["running_mean_init", "running_var_init"] (eval cases),
//               "running_mean_1", "running_var_1" (after forward on x),
//               "running_mean_2", "running_var_2" (after a second forward on x2)}]}
//   T = {"shape": [...], "data": [...]} row-major. r is the projection: the
//   gradients are those of sum(out * r), so backward is seeded with r.
//   features: rows are the last axis, gain/bias [n]; channels: x [N, C, H, W],
//   rows are the H·W maps, gain/bias [C]. batchnorm: per channel x.dim(1).
//   pRMSNorm: k = max(1, floor(n·p)) of the row length n; k = n for the others.
//   groupnorm cases have fields of their own: "groups", "eps", "affine",
//   ["weight", "bias"], "out", "grad_x", ["grad_weight", "grad_bias"]; x [N, C, *].
//
// Every case runs twice: through the selector (make_norm with NormOptions, the
// parameters found by name and overwritten, so the factory, the module's
// choice of k and its parameter set are tested too) and through the raw op
// (layer_norm / rms_norm with an explicit k / batch_norm).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "rmsgrad/autograd/batch_norm.h"
#include "rmsgrad/autograd/gradcheck.h"
#include "rmsgrad/autograd/norm_ops.h"
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/normalization.h"
#include "test_util.h"

using nlohmann::json;
using namespace rg;

namespace {

Tensor T(const json& j) { return test::tensor_from_json(j); }

std::string index_str(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.rank());
  for (int a = shape.rank() - 1; a >= 0; --a) {
    idx[a] = flat % shape[a];
    flat /= shape[a];
  }
  std::ostringstream s;
  s << "[";
  for (size_t a = 0; a < idx.size(); ++a) s << (a ? ", " : "") << idx[a];
  return s.str() + "]";
}

// Tolerance: |got − want| ≤ 1e-5·S + 1e-4·|want|, S = RMS of the reference tensor.
//
// The difference is our float32 error alone: both sides start from the same
// float32 inputs (written exactly), the reference is computed in float64 and
// stored to 7 digits (≤ 5e-7 relative: under 1% of the bound below).
//  - Relative part. Each element is a few flops (relative error a few u,
//    u = 6e-8) on row statistics from reductions of up to n = 1024 terms; our
//    16-lane float sums err by at most (n/16 + 16)·u ≈ 5e-6 relative (n = 1024),
//    typically √n·u ≈ 2e-6. Through 1/D that error is relative to the element:
//    1e-4 leaves 20× over the worst case.
//  - Absolute part. Where an element is the difference of terms that cancel
//    (LayerNorm/BatchNorm centring, dx = r·(h − mean h − â·mean(h â)), gain and
//    bias gradients summing m ≤ 256 terms of random sign) the error is relative
//    to the size of the terms, not to the result. S measures that size: for
//    elementwise results it is the terms' scale; for a sum of m random-sign
//    terms S ≈ √m·term, and the summation error is ≈ √m·u·term = u·S typically,
//    m·u·term = √m·u·S ≤ 16u·S ≈ 1e-6·S at worst. 1e-5·S is ≥ 10× that.
//    (Measured: torch's own float32 computation lands within 2.4e-6·S.)
// Genuine bugs — a wrong k, a missing term, ε on the wrong side of the root,
// a biased running variance — show as relative errors of 1e-3 to 1.
bool close(const std::string& label, const std::string& what, const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) {
    FAIL_CHECK(label << ": " << what << " has shape " << got.shape().str() << ", expected "
                     << want.shape().str());
    return false;
  }
  double ss = 0.0;
  for (float v : want.span()) ss += double(v) * v;
  const double scale = std::sqrt(ss / std::max<int64_t>(1, want.numel()));
  int64_t bad = 0, first = -1;
  double worst = 0.0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.data()[i], b = want.data()[i];
    const double bound = 1e-5 * scale + 1e-4 * std::fabs(b);
    if (!(std::fabs(a - b) <= bound)) {  // also catches NaN
      if (first < 0) first = i;
      ++bad;
      worst = std::max(worst, std::fabs(a - b) / bound);
    }
  }
  if (bad) {
    const int64_t i = first;
    FAIL_CHECK(label << ": " << what << index_str(want.shape(), i) << " = " << got.data()[i] << ", expected "
                     << want.data()[i] << " (|diff| " << std::fabs(got.data()[i] - want.data()[i])
                     << ", bound " << 1e-5 * scale + 1e-4 * std::fabs(want.data()[i]) << "); " << bad << " of "
                     << want.numel() << " elements out, worst " << worst << "x the bound");
  }
  return bad == 0;
}

NormLayout layout_of(const json& c) {
  return c.at("layout").get<std::string>() == "channels" ? NormLayout::Channels : NormLayout::Features;
}

// One case through one path: forward, backward seeded with r, every comparison.
void run_case(const json& c, const json& inputs, bool via_module) {
  const std::string kind = c.at("kind"), name = c.at("name");
  const std::string label = name + (via_module ? " [make_norm]" : " [raw op]");
  const json& in = inputs.at(c.at("input").get<std::string>());
  const NormLayout layout = layout_of(c);
  const bool has_bias = c.contains("bias"), training = c.at("training"), inside = c.at("eps_inside");
  const float eps = c.at("eps"), p = c.at("p"), momentum = c.at("momentum");
  const int64_t k = c.at("k");

  Var x(T(in.at("x")), true);
  const Tensor r = T(in.at("r"));
  const int64_t n = layout == NormLayout::Channels ? x.dim(2) * x.dim(3) : x.dim(-1);
  const int64_t features = layout == NormLayout::Channels || kind == "batchnorm" ? x.dim(1) : x.dim(-1);
  if (kind == "prmsnorm") {
    CHECK_MESSAGE(partial_units(n, p) == k, label << ": partial_units(" << n << ", " << p
                                                  << ") = " << partial_units(n, p) << ", torch used k = " << k);
  } else {
    REQUIRE(k == n);
  }

  Var gain, bias;
  std::function<Var(const Var&)> f;
  BatchNormState* state = nullptr;
  std::shared_ptr<Norm> module;
  auto raw_state = std::make_shared<BatchNormState>();
  if (via_module) {
    NormOptions o;
    o.kind = parse_norm_kind(kind);
    o.p = p;
    o.eps = eps;
    o.eps_inside = inside;
    o.rms_bias = has_bias && kind != "layernorm" && kind != "batchnorm";
    o.momentum = momentum;
    module = make_norm(o, features, layout);
    const auto params = module->named_parameters();
    REQUIRE_MESSAGE(params.size() == (has_bias ? 2u : 1u), label << ": make_norm made " << params.size()
                                                                 << " parameters, expected " << (has_bias ? 2 : 1));
    CHECK(params[0].first == "gain");
    gain = params[0].second;
    if (has_bias) {
      CHECK(params[1].first == "bias");
      bias = params[1].second;
    }
    if (kind == "batchnorm") {
      auto bn = std::dynamic_pointer_cast<BatchNorm>(module);
      REQUIRE_MESSAGE(bn, label << ": make_norm did not make a BatchNorm");
      state = &bn->state;
      CHECK(state->eps == eps);
      CHECK(state->momentum == momentum);
      module->train(training);
    }
    f = [module](const Var& v) { return module->forward(v); };
  } else {
    gain = Var(T(c.at("gain")), true);
    if (has_bias) bias = Var(T(c.at("bias")), true);
    if (kind == "layernorm") {
      f = [=](const Var& v) { return layer_norm(v, gain, bias, eps, layout); };
    } else if (kind == "batchnorm") {
      raw_state->running_mean = Tensor::zeros(Shape{features});
      raw_state->running_var = Tensor::ones(Shape{features});
      raw_state->eps = eps;
      raw_state->momentum = momentum;
      state = raw_state.get();
      f = [=](const Var& v) { return batch_norm(v, gain, bias, *raw_state, training); };
    } else {
      RmsNormConfig cfg;
      cfg.k = kind == "prmsnorm" ? k : 0;
      cfg.eps = eps;
      cfg.eps_inside = inside;
      cfg.l2 = kind == "l2norm";
      f = [=](const Var& v) { return rms_norm(v, gain, bias, cfg, layout); };
    }
  }
  gain.value().copy_from(T(c.at("gain")));
  if (has_bias) bias.value().copy_from(T(c.at("bias")));
  if (state && c.contains("running_mean_init")) {
    state->running_mean.copy_from(T(c.at("running_mean_init")));
    state->running_var.copy_from(T(c.at("running_var_init")));
  }

  Var y = f(x);
  tape().backward(y, r);
  tape().clear();
  close(label, "out", y.value(), T(c.at("out")));
  close(label, "grad_x", x.grad(), T(c.at("grad_x")));
  close(label, "grad_gain", gain.grad(), T(c.at("grad_gain")));
  if (has_bias) close(label, "grad_bias", bias.grad(), T(c.at("grad_bias")));
  if (!state) return;
  close(label, "running_mean_1", state->running_mean, T(c.at("running_mean_1")));
  close(label, "running_var_1", state->running_var, T(c.at("running_var_1")));
  {
    NoGradGuard no_grad;
    f(Var(T(in.at("x2"))));
  }
  close(label, "running_mean_2", state->running_mean, T(c.at("running_mean_2")));
  close(label, "running_var_2", state->running_var, T(c.at("running_var_2")));
}

const json& reference() {
  static const json j = test::load_reference("norms.json");
  return j;
}

// Runs every case of the given kinds and layout through both paths.
void run_cases(const std::set<std::string>& kinds, const std::string& layout, size_t at_least) {
  const json& ref = reference();
  size_t count = 0;
  for (const json& c : ref.at("cases")) {
    if (!kinds.count(c.at("kind").get<std::string>()) || c.at("layout").get<std::string>() != layout) continue;
    ++count;
    for (bool via_module : {true, false}) {
      INFO("case " << c.at("name").get<std::string>() << (via_module ? " via make_norm" : " via the raw op"));
      run_case(c, ref.at("inputs"), via_module);
    }
  }
  MESSAGE(count << " reference cases (" << layout << ")");
  CHECK_MESSAGE(count >= at_least, "only " << count << " cases in norms.json, expected " << at_least);
}

}  // namespace

TEST_CASE("reference: LayerNorm against torch.nn.functional.layer_norm") {
  run_cases({"layernorm"}, "features", 4);
  run_cases({"layernorm"}, "channels", 2);
}

TEST_CASE("reference: RMSNorm (ε inside and outside, with and without bias)") {
  run_cases({"rmsnorm"}, "features", 8);
  run_cases({"rmsnorm"}, "channels", 6);
}

TEST_CASE("reference: pRMSNorm (the RMS of the first k = floor(n·p) units)") {
  run_cases({"prmsnorm"}, "features", 6);
  run_cases({"prmsnorm"}, "channels", 5);
}

TEST_CASE("reference: L2-Norm") {
  run_cases({"l2norm"}, "features", 4);
  run_cases({"l2norm"}, "channels", 4);
}

TEST_CASE("reference: BatchNorm (training with running statistics, and eval)") {
  run_cases({"batchnorm"}, "features", 5);
  run_cases({"batchnorm"}, "channels", 5);
}

TEST_CASE("reference: norms.json covers every kind, layout and variant") {
  const json& ref = reference();
  std::set<std::string> seen;
  for (const json& c : ref.at("cases")) {
    const std::string kind = c.at("kind"), layout = c.at("layout");
    seen.insert(kind + "/" + layout);
    if (kind == "rmsnorm") seen.insert(std::string("rmsnorm/") + (c.at("eps_inside").get<bool>() ? "in" : "out"));
    if (kind == "batchnorm") seen.insert(std::string("batchnorm/") + (c.at("training").get<bool>() ? "train" : "eval"));
    if (kind == "prmsnorm") seen.insert("prmsnorm/p" + std::to_string(c.at("p").get<float>()));
  }
  for (const char* want : {"layernorm/features", "layernorm/channels", "rmsnorm/features", "rmsnorm/channels",
                           "prmsnorm/features", "prmsnorm/channels", "l2norm/features", "l2norm/channels",
                           "batchnorm/features", "batchnorm/channels", "rmsnorm/in", "rmsnorm/out",
                           "batchnorm/train", "batchnorm/eval", "prmsnorm/p0.062500", "prmsnorm/p0.125000"})
    CHECK_MESSAGE(seen.count(want), "norms.json has no " << want << " case");
}

namespace {

// One GroupNorm case, through the layer (its parameters found by name and
// overwritten) or the raw op; the same tolerance as every other norm above
// (`close`): the block reductions are over m ≤ 75 values and the weight and
// bias gradients sum N·S ≤ 66 terms, inside what its derivation allows.
void run_group_case(const json& c, const json& inputs, bool via_module) {
  const std::string label = c.at("name").get<std::string>() + (via_module ? " [GroupNorm]" : " [raw op]");
  const json& in = inputs.at(c.at("input").get<std::string>());
  const int64_t groups = c.at("groups");
  const float eps = c.at("eps");
  const bool affine = c.at("affine");
  Var x(T(in.at("x")), true);
  Var weight, bias;
  std::function<Var(const Var&)> f;
  if (via_module) {
    auto module = std::make_shared<GroupNorm>(groups, x.dim(1), eps, affine);
    const auto params = module->named_parameters();
    REQUIRE(params.size() == (affine ? 2u : 0u));
    if (affine) {
      CHECK(params[0].first == "weight");
      CHECK(params[1].first == "bias");
      weight = params[0].second;
      bias = params[1].second;
    }
    f = [module](const Var& v) { return module->forward(v); };
  } else {
    if (affine) {
      weight = Var(T(c.at("weight")), true);
      bias = Var(T(c.at("bias")), true);
    }
    f = [=](const Var& v) { return group_norm(v, groups, weight, bias, eps); };
  }
  if (affine) {
    weight.value().copy_from(T(c.at("weight")));
    bias.value().copy_from(T(c.at("bias")));
  }
  Var y = f(x);
  tape().backward(y, T(in.at("r")));
  tape().clear();
  close(label, "out", y.value(), T(c.at("out")));
  close(label, "grad_x", x.grad(), T(c.at("grad_x")));
  if (!affine) return;
  close(label, "grad_weight", weight.grad(), T(c.at("grad_weight")));
  close(label, "grad_bias", bias.grad(), T(c.at("grad_bias")));
}

}  // namespace

TEST_CASE("reference: GroupNorm against torch.nn.GroupNorm ([N, C], [N, C, L], [N, C, H, W]; 1 to C groups)") {
  const json& ref = reference();
  size_t count = 0;
  for (const json& c : ref.at("cases")) {
    if (c.at("kind") != "groupnorm") continue;
    ++count;
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (bool via_module : {true, false}) {
        INFO("case " << c.at("name").get<std::string>() << ", " << threads << " threads");
        run_group_case(c, ref.at("inputs"), via_module);
      }
    }
  }
  set_num_threads(2);
  CHECK_MESSAGE(count >= 8, "only " << count << " GroupNorm cases in norms.json, expected 8");
}

TEST_CASE("group_norm passes gradient checks: with and without weight and bias, ranks 2 to 5") {
  Generator gen(31);
  struct Case {
    Shape shape;
    int64_t groups;
    bool weight, bias;
  };
  for (const Case& k : {Case{Shape{3, 6, 2, 3}, 3, true, true}, Case{Shape{2, 4, 5}, 2, true, false},
                        Case{Shape{4, 6}, 2, false, true}, Case{Shape{2, 4, 3, 2, 2}, 4, false, false},
                        Case{Shape{2, 3, 4}, 1, true, true}}) {
    CAPTURE(k.shape.str());
    CAPTURE(k.groups);
    const int64_t c = k.shape[1];
    // Offset and scaled away from zero mean and unit variance, so the centring
    // and the scaling both have work to do.
    std::vector<Tensor> inputs = {normal(k.shape, 0.5f, 1.5f, gen)};
    if (k.weight) inputs.push_back(normal(Shape{c}, 1.0f, 0.3f, gen));
    if (k.bias) inputs.push_back(normal(Shape{c}, 0.0f, 0.3f, gen));
    GradCheckResult r = gradcheck(
        [&](const std::vector<Var>& v) {
          Var w = k.weight ? v[1] : Var(), b = k.bias ? v[k.weight ? 2 : 1] : Var();
          return group_norm(v[0], k.groups, w, b);
        },
        inputs);
    CHECK_MESSAGE(r.ok, r.report);
  }
  // Used twice: the first backward writes x's fresh gradient, the second adds.
  GradCheckResult twice = gradcheck(
      [](const std::vector<Var>& v) { return group_norm(v[0], 2, v[1], v[2]) + group_norm(v[0], 4, Var(), Var()); },
      {normal(Shape{2, 4, 3}, 0.0f, 1.0f, gen), normal(Shape{4}, 1.0f, 0.3f, gen), normal(Shape{4}, 0.0f, 0.3f, gen)});
  CHECK_MESSAGE(twice.ok, twice.report);
}

TEST_CASE("GroupNorm: starting parameters, and errors naming the op and shapes") {
  GroupNorm norm(2, 6);
  CHECK(norm.num_groups() == 2);
  CHECK(norm.weight.value().to_vector() == std::vector<float>(6, 1.0f));  // torch: ones and zeros
  CHECK(norm.bias.value().to_vector() == std::vector<float>(6, 0.0f));
  CHECK(GroupNorm(3, 6, 1e-5f, false).named_parameters().empty());

  Var x = constant(Tensor::ones(Shape{2, 6, 4}));
  CHECK_THROWS_WITH_AS(group_norm(x, 4, Var(), Var()),
                       doctest::Contains("group_norm: 4 groups do not divide the 6 channels of input [2, 6, 4]"),
                       Error);
  CHECK_THROWS_WITH_AS(group_norm(constant(Tensor::ones(Shape{6})), 2, Var(), Var()),
                       doctest::Contains("group_norm: input must be [N, C, *], got [6]"), Error);
  CHECK_THROWS_WITH_AS(group_norm(x, 2, constant(Tensor::ones(Shape{4})), Var()),
                       doctest::Contains("group_norm: weight [4] must be [6] for input [2, 6, 4]"), Error);
  CHECK_THROWS_WITH_AS(group_norm(x, 2, Var(), constant(Tensor::ones(Shape{6, 1}))),
                       doctest::Contains("group_norm: bias [6, 1] must be [6] for input [2, 6, 4]"), Error);
  CHECK_THROWS_WITH_AS(group_norm(constant(Tensor::ones(Shape{2, 6, 0})), 2, Var(), Var()),
                       doctest::Contains("group_norm: cannot normalize empty groups"), Error);
  CHECK_THROWS_WITH_AS(GroupNorm(4, 6), doctest::Contains("GroupNorm: 4 groups must divide the 6 channels"), Error);
  CHECK_THROWS_WITH_AS(norm(constant(Tensor::ones(Shape{2, 5, 3}))),
                       doctest::Contains("GroupNorm(2 groups, 6 channels): input must be [N, 6, *], got [2, 5, 3]"),
                       Error);
}
