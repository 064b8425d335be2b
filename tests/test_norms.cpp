// Normalizations: each fused kernel against its twin composed from primitive
// ops (values and every gradient), gradient checks, the selector, and the
// paper's invariance properties.
#include <doctest/doctest.h>

#include <cmath>

#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;

namespace {

// The composed twins are the library's (autograd/composed_norm_ops.h): the
// same functions built from primitive ops, each with its own backward.
Var composed_rms(const Var& x, const Var& g, const Var& b, int64_t k, float eps, bool inside, bool l2,
                 NormLayout layout = NormLayout::Features) {
  return composed_rms_norm(x, g, b, RmsNormConfig{.k = k, .eps = eps, .eps_inside = inside, .l2 = l2}, layout);
}

// Fused and composed agree to float rounding: both do the same arithmetic in
// float32 over rows of ≤ 1024 units, so differences are a few ulps of the
// row sums: 1e-5 absolute + 1e-4 relative covers them with margin.
void check_twins(const char* name, const std::function<Var(const std::vector<Var>&)>& fused,
                 const std::function<Var(const std::vector<Var>&)>& composed, const std::vector<Tensor>& inputs) {
  test::Evaluated a = test::evaluate(fused, inputs), b = test::evaluate(composed, inputs);
  INFO(name);
  REQUIRE(a.y.shape() == b.y.shape());
  auto close = [](const Tensor& p, const Tensor& q, const std::string& what) {
    for (int64_t i = 0; i < p.numel(); ++i) {
      float x = p.data()[i], y = q.data()[i];
      if (!(std::fabs(x - y) <= 1e-5f + 1e-4f * std::fabs(y))) {
        FAIL_CHECK(what << " element " << i << ": fused " << x << ", composed " << y);
        return;
      }
    }
  };
  close(a.y, b.y, "output");
  for (size_t i = 0; i < a.grads.size(); ++i) close(a.grads[i], b.grads[i], "gradient of input " + std::to_string(i));
}

std::vector<Tensor> inputs_for(const Shape& x, int64_t params, uint64_t seed) {
  Generator gen(seed);
  Tensor xv = normal(x, 0.3f, 1.5f, gen);  // non-zero mean: re-centering matters
  return {xv, uniform(Shape{params}, 0.5f, 1.5f, gen), uniform(Shape{params}, -0.5f, 0.5f, gen)};
}

}  // namespace

TEST_CASE("RMSNorm family: fused equals composed") {
  for (Shape shape : {Shape{5, 7}, Shape{3, 4, 33}, Shape{6, 1024}}) {
    const int64_t n = shape[-1];
    auto in = inputs_for(shape, n, 1);
    for (bool inside : {true, false})
      for (bool with_bias : {false, true})
        for (int64_t k : {n, partial_units(n, 0.0625f), partial_units(n, 0.5f)}) {
          RmsNormConfig c{.k = k, .eps = 1e-5f, .eps_inside = inside, .l2 = false};
          auto fused = [&](const std::vector<Var>& v) { return rms_norm(v[0], v[1], with_bias ? v[2] : Var(), c); };
          auto composed = [&](const std::vector<Var>& v) {
            return composed_rms(v[0], v[1], with_bias ? v[2] : Var(), k, 1e-5f, inside, false);
          };
          check_twins(fmt::format("rms {} k={} inside={} bias={}", shape, k, inside, with_bias).c_str(), fused,
                      composed, in);
        }
    RmsNormConfig l2{.k = 0, .eps = 1e-5f, .eps_inside = true, .l2 = true};
    check_twins("l2norm", [&](const std::vector<Var>& v) { return rms_norm(v[0], v[1], Var(), l2); },
                [&](const std::vector<Var>& v) { return composed_rms(v[0], v[1], Var(), n, 1e-5f, true, true); }, in);
  }
}

TEST_CASE("LayerNorm: fused equals composed") {
  for (Shape shape : {Shape{5, 7}, Shape{3, 4, 33}, Shape{6, 1024}}) {
    auto in = inputs_for(shape, shape[-1], 2);
    check_twins("layernorm", [](const std::vector<Var>& v) { return layer_norm(v[0], v[1], v[2], 1e-5f); },
                [](const std::vector<Var>& v) { return composed_layer_norm(v[0], v[1], v[2], 1e-5f); }, in);
  }
}

TEST_CASE("conv maps: normalized over H×W per sample and channel, gain per channel") {
  for (Shape shape : {Shape{2, 3, 5, 5}, Shape{4, 6, 8, 8}}) {
    auto in = inputs_for(shape, shape[1], 3);
    const int64_t hw = shape[2] * shape[3];
    for (int64_t k : {hw, partial_units(hw, 0.125f)}) {
      RmsNormConfig c{.k = k, .eps = 1e-6f, .eps_inside = true, .l2 = false};
      check_twins(
          "rms channels", [&](const std::vector<Var>& v) { return rms_norm(v[0], v[1], v[2], c, NormLayout::Channels); },
          [&](const std::vector<Var>& v) {
            return composed_rms(v[0], v[1], v[2], k, 1e-6f, true, false, NormLayout::Channels);
          },
          in);
    }
    check_twins(
        "layernorm channels",
        [](const std::vector<Var>& v) { return layer_norm(v[0], v[1], v[2], 1e-6f, NormLayout::Channels); },
        [](const std::vector<Var>& v) { return composed_layer_norm(v[0], v[1], v[2], 1e-6f, NormLayout::Channels); },
        in);
  }
}

TEST_CASE("BatchNorm: training equals composed, running statistics, eval mode") {
  auto in = inputs_for(Shape{16, 5}, 5, 4);
  BatchNormState state{Tensor::zeros(Shape{5}), Tensor::ones(Shape{5}), 0.1f, 1e-5f};
  BatchNormState twin{Tensor::zeros(Shape{5}), Tensor::ones(Shape{5}), 0.1f, 1e-5f};
  check_twins("batchnorm train", [&](const std::vector<Var>& v) { return batch_norm(v[0], v[1], v[2], state, true); },
              [&](const std::vector<Var>& v) { return composed_batch_norm(v[0], v[1], v[2], twin, true); }, in);
  CHECK(max_abs_diff(state.running_mean, twin.running_mean) < 1e-6f);
  CHECK(max_abs_diff(state.running_var, twin.running_var) < 1e-5f);
  // After one training call: running = 0.9·init + 0.1·batch (unbiased variance).
  const Tensor& x = in[0];
  for (int64_t c = 0; c < 5; ++c) {
    double m = 0, s = 0;
    for (int64_t i = 0; i < 16; ++i) m += x.at({i, c});
    m /= 16;
    for (int64_t i = 0; i < 16; ++i) s += (x.at({i, c}) - m) * (x.at({i, c}) - m);
    CHECK(state.running_mean.at({c}) == doctest::Approx(0.1 * m).epsilon(1e-5));
    CHECK(state.running_var.at({c}) == doctest::Approx(0.9 + 0.1 * s / 15).epsilon(1e-5));
  }
  // Eval: an affine map with the running statistics.
  auto eval_fused = [&](const std::vector<Var>& v) { return batch_norm(v[0], v[1], v[2], state, false); };
  auto eval_composed = [&](const std::vector<Var>& v) { return composed_batch_norm(v[0], v[1], v[2], state, false); };
  Tensor mean_before = state.running_mean.clone();
  check_twins("batchnorm eval", eval_fused, eval_composed, in);
  CHECK(max_abs_diff(mean_before, state.running_mean) == 0.0f);  // eval leaves them alone
}

TEST_CASE("BatchNorm: a tall [N, C] input summed in row blocks on two threads equals composed") {
  // 4096 rows of 12 channels: more than one block of rows, so each thread
  // keeps its own partial sums and they are added at the end.
  const int previous = num_threads();
  set_num_threads(2);
  auto in = inputs_for(Shape{4096, 12}, 12, 7);
  BatchNormState state{Tensor::zeros(Shape{12}), Tensor::ones(Shape{12}), 0.1f, 1e-5f};
  BatchNormState twin = state;
  twin.running_mean = state.running_mean.clone();
  twin.running_var = state.running_var.clone();
  check_twins("batchnorm train, tall", [&](const std::vector<Var>& v) { return batch_norm(v[0], v[1], v[2], state, true); },
              [&](const std::vector<Var>& v) { return composed_batch_norm(v[0], v[1], v[2], twin, true); }, in);
  set_num_threads(previous);
}

TEST_CASE("gradient checks of every fused norm") {
  auto in = inputs_for(Shape{3, 16}, 16, 5);
  auto map_in = inputs_for(Shape{2, 3, 4, 4}, 3, 6);
  std::vector<std::pair<const char*, std::function<Var(const std::vector<Var>&)>>> cases = {
      {"rms", [](const std::vector<Var>& v) { return rms_norm(v[0], v[1], v[2], {}); }},
      {"prms", [](const std::vector<Var>& v) { return rms_norm(v[0], v[1], v[2], {.k = 3}); }},
      {"rms eps outside", [](const std::vector<Var>& v) { return rms_norm(v[0], v[1], v[2], {.eps_inside = false}); }},
      {"l2", [](const std::vector<Var>& v) { return rms_norm(v[0], v[1], v[2], {.l2 = true}); }},
      {"layernorm", [](const std::vector<Var>& v) { return layer_norm(v[0], v[1], v[2], 1e-5f); }},
  };
  for (auto& [name, f] : cases) {
    GradCheckResult r = gradcheck(f, in);
    CHECK_MESSAGE(r.ok, name << ": " << r.report);
  }
  auto ch = [](const std::vector<Var>& v) { return rms_norm(v[0], v[1], v[2], {.k = 5}, NormLayout::Channels); };
  GradCheckResult r = gradcheck(ch, map_in);
  CHECK_MESSAGE(r.ok, "prms channels: " << r.report);
  r = gradcheck([](const std::vector<Var>& v) { return layer_norm(v[0], v[1], v[2], 1e-5f, NormLayout::Channels); },
                map_in);
  CHECK_MESSAGE(r.ok, "layernorm channels: " << r.report);
  BatchNormState state{Tensor::zeros(Shape{3}), Tensor::ones(Shape{3}), 0.1f, 1e-5f};
  r = gradcheck([&](const std::vector<Var>& v) { return batch_norm(v[0], v[1], v[2], state, true); }, map_in);
  CHECK_MESSAGE(r.ok, "batchnorm: " << r.report);
}

TEST_CASE("pRMSNorm: only the first k units receive the gradient through the RMS") {
  // With g = 1 and δ = e_0, dL/da_j for j ≥ k is exactly 0 (no RMS term, no
  // direct term), and for 0 < j < k it is −a_j a_0 c ≠ 0.
  Var x = parameter(Tensor::from(Shape{1, 8}, {1, 2, 3, 4, 5, 6, 7, 8}));
  Var g = constant(Tensor::ones(Shape{8}));
  Var y = rms_norm(x, g, Var(), {.k = 4});
  Tensor seed = Tensor::zeros(Shape{1, 8});
  seed.data()[0] = 1.0f;
  tape().backward(y, seed);
  tape().clear();
  for (int j = 1; j < 4; ++j) CHECK(x.grad().at({0, j}) != 0.0f);
  for (int j = 4; j < 8; ++j) CHECK(x.grad().at({0, j}) == 0.0f);
}

TEST_CASE("RMSNorm is invariant to re-scaling its input, not to re-centering") {
  Generator gen(8);
  Tensor a = normal(Shape{4, 64}, 0.0f, 1.0f, gen);
  Tensor scaled = a.clone();
  for (float& v : scaled.span()) v *= 7.5f;
  Tensor shifted = a.clone();
  for (float& v : shifted.span()) v += 3.0f;
  NoGradGuard no_grad;
  Var g = constant(Tensor::ones(Shape{64}));
  RmsNormConfig c{.eps = 0.0f};
  Tensor y = rms_norm(constant(a), g, Var(), c).value();
  CHECK(max_abs_diff(y, rms_norm(constant(scaled), g, Var(), c).value()) < 1e-5f);
  CHECK(max_abs_diff(y, rms_norm(constant(shifted), g, Var(), c).value()) > 0.1f);
  Var b = constant(Tensor::zeros(Shape{64}));
  Tensor z = layer_norm(constant(a), g, b, 0.0f).value();
  CHECK(max_abs_diff(z, layer_norm(constant(shifted), g, b, 0.0f).value()) < 1e-4f);
}

TEST_CASE("the selector builds every norm with dotted parameter names") {
  for (std::string name : {"none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "batchnorm", "weightnorm"}) {
    NormOptions o;
    o.kind = parse_norm_kind(name);
    CHECK(norm_name(o.kind) == name);
    auto norm = make_norm(o, 32);
    Generator gen(1);
    Var y = norm->forward(constant(normal(Shape{4, 32}, 0.0f, 1.0f, gen)));
    CHECK(y.shape() == Shape{4, 32});
    bool has_gain = o.kind != NormKind::None && o.kind != NormKind::WeightNorm;
    CHECK(norm->named_parameters().size() == (has_gain ? (o.kind == NormKind::RMSNorm || o.kind == NormKind::PRMSNorm || o.kind == NormKind::L2Norm ? 1u : 2u) : 0u));
  }
  CHECK_THROWS_WITH_AS(parse_norm_kind("groupnorm"),
                       "unknown normalization 'groupnorm' (expected one of "
                       "none|layernorm|rmsnorm|prmsnorm|l2norm|batchnorm|weightnorm)",
                       Error);
  CHECK(partial_units(1024, 0.0625f) == 64);
  CHECK(partial_units(10, 0.0625f) == 1);  // floor would give 0; k ≥ 1
  CHECK(partial_units(33, 0.125f) == 4);
  NormOptions bn{.kind = NormKind::BatchNorm};
  auto norm = make_norm(bn, 6);
  CHECK(norm->named_buffers().size() == 2);
  CHECK(norm->named_buffers()[0].first == "running_mean");
  CHECK_THROWS_AS(rms_norm(constant(Tensor::ones(Shape{2, 4})), constant(Tensor::ones(Shape{5})), Var(), {}), Error);
}

TEST_CASE("pre-activation shift: a learnable offset starting at C; none at C = 0; LayerNorm is blind to it, RMSNorm not") {
  Generator gen(13);
  const Tensor x = normal(Shape{4, 16}, 0.0f, 1.0f, gen);
  for (NormKind kind : {NormKind::LayerNorm, NormKind::RMSNorm, NormKind::None}) {
    NormOptions plain{.kind = kind}, shifted{.kind = kind, .preact_shift = 4.0f};
    auto a = make_norm(plain, 16), b = make_norm(shifted, 16);
    CHECK(!a->offset.defined());
    CHECK(a->named_parameters().size() + 1 == b->named_parameters().size());
    CHECK(b->named_parameters().back().first == "offset");
    CHECK(b->offset.value().at({3}) == 4.0f);
    Var xb(x.clone(), true);
    Var ya = a->forward(constant(x)), yb = b->forward(xb);
    const float diff = max_abs_diff(ya.value(), yb.value());
    if (kind == NormKind::LayerNorm) CHECK(diff < 1e-5f);  // x + C·1 re-centred away
    else CHECK(diff > 0.5f);                                // RMSNorm and none see the shift
    tape().backward(yb, normal(yb.shape(), 0.0f, 1.0f, gen));
    tape().clear();
    CHECK(b->offset.has_grad());
    CHECK(max_abs_diff(b->offset.grad(), Tensor::zeros(Shape{16})) > 0.0f);
  }
  // Conv maps: one offset per channel.
  NormOptions maps{.kind = NormKind::RMSNorm, .preact_shift = 1.0f};
  auto norm = make_norm(maps, 3, NormLayout::Channels);
  Var y = norm->forward(constant(normal(Shape{2, 3, 4, 4}, 0.0f, 1.0f, gen)));
  CHECK(y.shape() == Shape{2, 3, 4, 4});
  CHECK(norm->offset.shape() == Shape{3});
  tape().clear();
}
