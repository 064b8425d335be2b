// The basic layers: initialisers, the fused weight_norm op, Linear (plain and
// weight-normed, with Salimans & Kingma's data-dependent init), Embedding,
// Dropout, GaussianNoise, the activation selector and Flatten. Linear,
// Embedding and Flatten are compared with PyTorch (tests/reference/make_layer_refs.py).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "rmsgrad/autograd/weight_norm.h"
#include "rmsgrad/layers/activations.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/embedding.h"
#include "rmsgrad/layers/init.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/sequential.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;

namespace {

struct Moments {
  double mean, variance;
};

Moments moments(const Tensor& t) {
  double sum = 0.0, sum_sq = 0.0;
  for (float v : t.span()) sum += v;
  const double mean = sum / static_cast<double>(t.numel());
  for (float v : t.span()) sum_sq += (v - mean) * (v - mean);
  return {mean, sum_sq / static_cast<double>(t.numel())};
}

double max_abs(const Tensor& t) {
  double biggest = 0.0;
  for (float v : t.span()) biggest = std::max(biggest, static_cast<double>(std::fabs(v)));
  return biggest;
}

// Largest |(M Mᵀ − I)_ij| for M viewed as [rows, cols] = [shape[0], rest]
// when rows ≤ cols (orthonormal rows), else |(MᵀM − I)_ij| (columns).
double orthonormality_error(const Tensor& m) {
  const int64_t rows = m.dim(0), cols = m.numel() / rows;
  const bool by_rows = rows <= cols;
  const int64_t count = by_rows ? rows : cols, length = by_rows ? cols : rows;
  auto at = [&](int64_t vec, int64_t k) { return by_rows ? m.data()[vec * cols + k] : m.data()[k * cols + vec]; };
  double worst = 0.0;
  for (int64_t a = 0; a < count; ++a)
    for (int64_t b = 0; b < count; ++b) {
      double dot = 0.0;
      for (int64_t k = 0; k < length; ++k) dot += static_cast<double>(at(a, k)) * at(b, k);
      worst = std::max(worst, std::fabs(dot - (a == b ? 1.0 : 0.0)));
    }
  return worst;
}

std::vector<std::string> parameter_names(const Module& m) {
  std::vector<std::string> names;
  for (const auto& [name, _] : m.named_parameters()) names.push_back(name);
  return names;
}

// Copies each named tensor of `params` (a JSON object) into the module's
// parameter of that name; every parameter must be given.
void set_parameters(Module& m, const nlohmann::json& params) {
  auto named = m.named_parameters();
  REQUIRE(named.size() == params.size());
  for (auto& [name, p] : named) {
    INFO(name);
    REQUIRE(params.contains(name));
    Tensor t = test::tensor_from_json(params[name]);
    REQUIRE(t.shape() == p.shape());
    p.value().copy_from(t);
  }
}

// The references are exact (float64 from float32 inputs); we compute in
// float32. Each output or gradient element is a dot product of at most ~9
// terms of size ≲ 3, whose float32 rounding error is ≤ k·u·Σ|terms| ≈
// 9 · 6e-8 · 10 ≈ 5e-6 (u = 2^-24): inside atol. Weight norm adds a square
// root and a division, a few ulps more, far inside rtol (1e-4 ≈ 1700 ulps).
constexpr float kAtol = 1e-5f, kRtol = 1e-4f;

}  // namespace

// ------------------------------------------------------------------ init

TEST_CASE("init: constant, uniform, normal and the WeightInit kinds") {
  Generator gen(1);
  Tensor c = init_constant(Shape{3, 4}, 0.25f);
  for (float v : c.span()) CHECK(v == 0.25f);

  Tensor u = init_uniform(Shape{20000}, -0.5f, 1.5f, gen);
  for (float v : u.span()) CHECK((v >= -0.5f && v < 1.5f));
  CHECK(moments(u).mean == doctest::Approx(0.5).epsilon(0.02));

  Tensor n = init_normal(Shape{200, 100}, 0.05f, gen);
  Moments mn = moments(n);
  CHECK(std::fabs(mn.mean) < 0.05 * 0.02);  // σ/√n = 3.5e-4; 3σ
  CHECK(std::sqrt(mn.variance) == doctest::Approx(0.05).epsilon(0.02));

  // PyTorch's nn.Linear default: U(±1/sqrt(fan_in)).
  const double biggest = max_abs(make_weight(Shape{30, 400}, {WeightInitKind::FanInUniform}, gen));
  CHECK((biggest <= 0.05 && biggest > 0.049));
  Tensor g = make_weight(Shape{100, 100}, {WeightInitKind::Normal, 0.01f}, gen);
  CHECK(std::sqrt(moments(g).variance) == doctest::Approx(0.01).epsilon(0.03));
  CHECK_THROWS_AS(init_normal(Shape{2}, -1.0f, gen), Error);
}

TEST_CASE("xavier_uniform: bound sqrt(6/(fan_in+fan_out)) and variance 2/(fan_in+fan_out), dense and conv") {
  Generator gen(2);
  // Sampling error of a uniform's variance: sqrt(0.8/n) relative (kurtosis
  // 1.8), 0.4% for the dense case and 0.7% for the conv case; we allow 2.5%.
  for (auto [shape, fan_in, fan_out] : {std::tuple{Shape{300, 200}, 200.0, 300.0},
                                        std::tuple{Shape{64, 32, 3, 3}, 288.0, 576.0}}) {
    INFO(shape.str());
    Fans fans = weight_fans(shape);
    CHECK((fans.in == fan_in && fans.out == fan_out));
    Tensor w = xavier_uniform(shape, gen);
    const double bound = std::sqrt(6.0 / (fan_in + fan_out)), biggest = max_abs(w);
    CHECK((biggest <= bound && biggest > 0.99 * bound));
    Moments m = moments(w);
    CHECK(std::fabs(m.mean) < 0.02 * bound);
    CHECK(m.variance == doctest::Approx(2.0 / (fan_in + fan_out)).epsilon(0.025));
  }
  CHECK_THROWS_AS(xavier_uniform(Shape{5}, gen), Error);
}

TEST_CASE("orthogonal: orthonormal rows or columns, signs as torch, deterministic by seed") {
  // Householder QR in float32 loses orthogonality by ~m·u ≈ 50 · 6e-8: 1e-5 is ample.
  // Tall, square, wide, conv-shaped (8 × 36: orthonormal rows) and one row.
  for (const Shape& shape : {Shape{50, 20}, Shape{32, 32}, Shape{10, 40}, Shape{8, 4, 3, 3}, Shape{1, 5}}) {
    INFO(shape.str());
    Generator gen(7), same(7), other(8);
    Tensor q = orthogonal(shape, gen);
    CHECK(q.shape() == shape);
    CHECK(orthonormality_error(q) < 1e-5);
    CHECK(max_abs_diff(orthogonal(shape, same), q) == 0.0f);
    CHECK(max_abs_diff(orthogonal(shape, other), q) > 0.1f);
  }
  // Sign correction, as torch.nn.init.orthogonal_: for a tall Q from A = QR,
  // R = QᵀA must be upper triangular with a POSITIVE diagonal. A is the first
  // draw of the same seed, a row-major [n, m] buffer = column-major A [m, n].
  const int64_t m = 7, n = 4;
  Generator gen(11), replay(11);
  Tensor q = orthogonal(Shape{m, n}, gen);
  Tensor a = normal(Shape{n, m}, 0.0f, 1.0f, replay);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double r = 0.0;  // R[i, j] = Σ_k Q[k, i] A[k, j]
      for (int64_t k = 0; k < m; ++k) r += static_cast<double>(q.data()[k * n + i]) * a.data()[j * m + k];
      if (i > j) CHECK(std::fabs(r) < 1e-5);
      if (i == j) CHECK(r > 0.0);
    }
}

// ------------------------------------------------------------- weight_norm

TEST_CASE("weight_norm: fused equals composed (values and gradients), dense and conv-shaped") {
  for (const Shape& shape : {Shape{5, 7}, Shape{4, 3, 2, 2}}) {
    INFO(shape.str());
    Generator gen(3);
    const int64_t rows = shape[0], n = shape.numel() / rows;
    Tensor v0 = normal(shape, 0.0f, 1.0f, gen), g0 = normal(Shape{rows}, 1.0f, 0.3f, gen);
    Tensor seed = normal(shape, 0.0f, 1.0f, gen);

    Var v1 = parameter(v0.clone()), g1 = parameter(g0.clone());
    Var fused = weight_norm(v1, g1);
    tape().backward(fused, seed);
    tape().clear();

    Var v2 = parameter(v0.clone()), g2 = parameter(g0.clone());
    Var rows_v = reshape(v2, {rows, n});
    Var composed = reshape(rows_v * reshape(g2, {rows, 1}) * rsqrt(sum(square(rows_v), 1, true)), shape.dims());
    tape().backward(composed, seed);
    tape().clear();
    // Same float math in a different order (fused: one reciprocal norm per row).
    test::all_close(fused.value(), composed.value(), 1e-6f, 1e-5f, "W");
    test::all_close(v1.grad(), v2.grad(), 1e-6f, 1e-5f, "dv");
    test::all_close(g1.grad(), g2.grad(), 1e-6f, 1e-5f, "dg");

    // Each row of W has norm |g_i|.
    for (int64_t i = 0; i < rows; ++i) {
      double sq = 0.0;
      for (int64_t j = 0; j < n; ++j) sq += std::pow(fused.value().data()[i * n + j], 2);
      CHECK(std::sqrt(sq) == doctest::Approx(std::fabs(g0.data()[i])).epsilon(1e-5));
    }
  }
}

TEST_CASE("weight_norm: gradient check, and errors name the op and shapes") {
  Generator gen(4);
  for (const Shape& shape : {Shape{3, 5}, Shape{2, 3, 3, 1}}) {
    INFO(shape.str());
    GradCheckResult r = gradcheck([](const std::vector<Var>& v) { return weight_norm(v[0], v[1]); },
                                  {normal(shape, 0.0f, 1.0f, gen), normal(Shape{shape[0]}, 1.0f, 0.3f, gen)});
    CHECK_MESSAGE(r.ok, r.report);
  }
  Var v = parameter(Tensor::ones(Shape{3, 4}));
  CHECK_THROWS_WITH_AS(weight_norm(v, parameter(Tensor::ones(Shape{4}))),
                       "weight_norm: g [4] must be [3] for v [3, 4]", Error);
  CHECK_THROWS_AS(weight_norm(parameter(Tensor::ones(Shape{3})), parameter(Tensor::ones(Shape{3}))), Error);
  Tensor zero_row = Tensor::ones(Shape{3, 4});
  for (int j = 0; j < 4; ++j) zero_row.data()[4 + j] = 0.0f;
  CHECK_THROWS_WITH_AS(weight_norm(parameter(zero_row), parameter(Tensor::ones(Shape{3}))),
                       "weight_norm: row 1 of v [3, 4] has zero norm", Error);
  tape().clear();
}

// ------------------------------------------------------------------ Linear

TEST_CASE("linear: gradient check of the plain and weight-normed forms, 2-D and 3-D inputs") {
  Generator gen(5);
  auto randn = [&](const Shape& s) { return normal(s, 0.0f, 1.0f, gen); };
  for (const Shape& x_shape : {Shape{3, 4}, Shape{2, 3, 4}}) {
    INFO(x_shape.str());
    GradCheckResult plain = gradcheck([](const std::vector<Var>& v) { return linear(v[0], v[1], v[2]); },
                                      {randn(x_shape), randn(Shape{5, 4}), randn(Shape{5})});
    CHECK_MESSAGE(plain.ok, plain.report);
    GradCheckResult normed = gradcheck(
        [](const std::vector<Var>& v) { return linear(v[0], weight_norm(v[1], v[2]), v[3]); },
        {randn(x_shape), randn(Shape{5, 4}), normal(Shape{5}, 1.0f, 0.3f, gen), randn(Shape{5})});
    CHECK_MESSAGE(normed.ok, normed.report);
  }
  GradCheckResult no_bias = gradcheck([](const std::vector<Var>& v) { return linear(v[0], v[1], Var()); },
                                      {randn(Shape{4}), randn(Shape{3, 4})});
  CHECK_MESSAGE(no_bias.ok, no_bias.report);
}

TEST_CASE("Linear and Embedding against PyTorch: outputs and every gradient") {
  nlohmann::json ref = test::load_reference("layers_basic.json");
  int checked = 0;
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"], kind = c["kind"];
    INFO(name);
    Generator gen(0);
    if (kind == "linear") {
      const bool bias = c["bias"], normed = c["weight_norm"];
      Linear layer(c["in"], c["out"], gen, {.bias = bias, .weight_norm = normed});
      using Names = std::vector<std::string>;
      Names names = normed ? Names{"weight_v", "weight_g"} : Names{"weight"};
      if (bias) names.push_back("bias");
      CHECK(parameter_names(layer) == names);
      set_parameters(layer, c["params"]);
      Var x = parameter(test::tensor_from_json(c["x"]));
      Var y = layer(x);
      tape().backward(y, test::tensor_from_json(c["projection"]));  // L = Σ y ⊙ r
      tape().clear();
      test::all_close(y.value(), test::tensor_from_json(c["output"]), kAtol, kRtol, "output");
      test::all_close(x.grad(), test::tensor_from_json(c["grad_x"]), kAtol, kRtol, "grad x");
      for (auto& [pname, p] : layer.named_parameters())
        test::all_close(p.grad(), test::tensor_from_json(c["grad_params"][pname]), kAtol, kRtol, "grad " + pname);
      ++checked;
    } else if (kind == "embedding") {
      Embedding layer(c["vocab"], c["dim"], gen);
      CHECK(parameter_names(layer) == std::vector<std::string>{"weight"});
      set_parameters(layer, c["params"]);
      Indices ids(Shape(c["ids"]["shape"].get<std::vector<int64_t>>()), c["ids"]["data"].get<std::vector<int32_t>>());
      Var y = layer(ids);
      tape().backward(y, test::tensor_from_json(c["projection"]));
      tape().clear();
      // A lookup and a scatter-add of ≤ 3 repeats: exact up to one rounding.
      test::all_close(y.value(), test::tensor_from_json(c["output"]), kAtol, kRtol, "output");
      test::all_close(layer.weight.grad(), test::tensor_from_json(c["grad_params"]["weight"]), kAtol, kRtol,
                      "grad weight");
      ++checked;
    }
  }
  CHECK(checked == 6);
}

TEST_CASE("Linear: data-dependent init (Salimans & Kingma) against PyTorch and on a fresh batch") {
  nlohmann::json ref = test::load_reference("layers_basic.json");
  bool found = false;
  for (const auto& c : ref["cases"]) {
    if (c["kind"] != "wn_init") continue;
    found = true;
    Generator gen(0);
    Linear layer(c["in"], c["out"], gen, {.bias = true, .weight_norm = true});
    layer.weight_v.value().copy_from(test::tensor_from_json(c["weight_v"]));
    Var x = constant(test::tensor_from_json(c["x"]));
    layer.init_from_batch(x);
    CHECK(tape().size() == 0);  // the init records nothing
    // g and b come from the float32 product t (relative error ~1e-6) through
    // statistics taken in double: the same tolerance holds.
    test::all_close(layer.weight_g.value(), test::tensor_from_json(c["weight_g"]), kAtol, kRtol, "weight_g");
    test::all_close(layer.bias.value(), test::tensor_from_json(c["bias"]), kAtol, kRtol, "bias");
    NoGradGuard no_grad;
    test::all_close(layer(x).value(), test::tensor_from_json(c["output"]), kAtol, kRtol, "output");
  }
  CHECK(found);

  // On a batch of our own, off-centre and badly scaled, through a 3-D input:
  // afterwards every output unit has mean 0 and variance 1 on that batch.
  Generator gen(6);
  Linear layer(20, 8, gen, {.bias = true, .weight_norm = true, .init = {WeightInitKind::Normal, 0.05f}});
  Var x = constant(normal(Shape{16, 16, 20}, 3.0f, 5.0f, gen));
  layer.init_from_batch(x);
  NoGradGuard no_grad;
  Tensor y = layer(x).value().reshape(Shape{256, 8});
  for (int64_t i = 0; i < 8; ++i) {
    double mean = 0.0, sq = 0.0;
    for (int64_t r = 0; r < 256; ++r) mean += y.data()[r * 8 + i];
    mean /= 256;
    for (int64_t r = 0; r < 256; ++r) sq += std::pow(y.data()[r * 8 + i] - mean, 2);
    // float32 outputs of size ~1 summed 256 times in double: ~1e-6 errors.
    CHECK(std::fabs(mean) < 1e-4);
    CHECK(std::sqrt(sq / 256) == doctest::Approx(1.0).epsilon(1e-4));
  }
}

TEST_CASE("Linear: names, starting weights, 1-D input and errors") {
  Generator a(9), b(9);
  Linear plain(6, 4, a);
  Linear normed(6, 4, b, {.bias = false, .weight_norm = true});
  CHECK(parameter_names(plain) == std::vector<std::string>{"weight", "bias"});
  CHECK(parameter_names(normed) == std::vector<std::string>{"weight_v", "weight_g"});
  CHECK(plain.parameter_count() == 6 * 4 + 4);
  CHECK(normed.weight_g.shape() == Shape{4});
  CHECK(!normed.weight.defined());
  CHECK(!normed.bias.defined());
  // g starts at ‖v‖, so the weight-normed layer starts with the plain one's W.
  {
    NoGradGuard no_grad;
    test::all_close(normed.effective_weight().value(), plain.weight.value(), 1e-6f, 1e-5f, "starting W");
  }
  for (float v : plain.bias.value().span()) CHECK(v == 0.0f);

  // x [in] → y [out], the same as a one-row batch.
  Generator gen(10);
  Tensor row = normal(Shape{6}, 0.0f, 1.0f, gen);
  Var y1 = plain(constant(row));
  Var y2 = plain(constant(row.reshape(Shape{1, 6})));
  CHECK(y1.shape() == Shape{4});
  CHECK(max_abs_diff(y1.value(), y2.value().reshape(Shape{4})) == 0.0f);
  tape().clear();

  CHECK_THROWS_WITH_AS(plain(constant(Tensor::zeros(Shape{2, 5}))), "Linear(6 → 4): input [2, 5] must end in 6",
                       Error);
  CHECK_THROWS_WITH_AS(plain.init_from_batch(constant(Tensor::zeros(Shape{2, 6}))),
                       "Linear::init_from_batch: needs weight_norm (the layer has a plain weight)", Error);
  CHECK_THROWS_AS(Linear(0, 3, gen), Error);
  CHECK_THROWS_AS(linear(constant(Tensor::zeros(Shape{2, 6})), plain.weight, constant(Tensor::zeros(Shape{5}))),
                  Error);
}

// --------------------------------------------------------------- Embedding

TEST_CASE("Embedding: shapes, init σ and errors") {
  Generator gen(12);
  Embedding emb(1000, 64, gen, 0.5f);
  CHECK(emb.weight.shape() == Shape{1000, 64});
  CHECK(std::sqrt(moments(emb.weight.value()).variance) == doctest::Approx(0.5).epsilon(0.02));
  Var y = emb(Indices(Shape{2, 3}, {0, 999, 5, 5, 1, 0}));
  CHECK(y.shape() == Shape{2, 3, 64});
  CHECK(y.value().at({0, 1, 7}) == emb.weight.value().at({999, 7}));
  tape().clear();
  CHECK_THROWS_WITH_AS(emb(Indices(std::vector<int32_t>{3, 1000})),
                       "Embedding(1000 × 64): id 1000 at position 1 of ids [2] is outside [0, 1000)", Error);
}

// ---------------------------------------------------- Dropout, GaussianNoise

TEST_CASE("Dropout: identity in eval, same mask for the same seed, gradient is the mask") {
  const float p = 0.3f;
  Tensor ones = Tensor::ones(Shape{100, 100});
  Dropout first(p, 42), second(p, 42);
  Var x = parameter(ones.clone());
  Var y = first(x);
  Var y_again = second(constant(ones));
  CHECK(max_abs_diff(y.value(), y_again.value()) == 0.0f);  // same seed, same mask

  int64_t dropped = 0;
  for (float v : y.value().span()) {
    if (v == 0.0f) ++dropped;
    else CHECK(v == doctest::Approx(1.0f / (1.0f - p)));
  }
  // Binomial: sd of the fraction is sqrt(p(1−p)/n) = 0.0046; allow 4 sd.
  CHECK(static_cast<double>(dropped) / 10000.0 == doctest::Approx(p).epsilon(0.06));

  // dL/dx = mask for L = Σ y (x is all ones, so y is the mask itself).
  sum(y).backward();
  CHECK(max_abs_diff(x.grad(), y.value()) == 0.0f);
  tape().clear();

  // The generator advances: the next call draws a different mask.
  Var z = first(constant(ones));
  CHECK(max_abs_diff(z.value(), y.value()) > 0.0f);

  first.eval();
  Var same = first(x);
  CHECK(same.node() == x.node());  // evaluation returns the input itself
  first.train();
  CHECK(first.is_training());

  // A shared generator is advanced by the module.
  Generator shared(1);
  Dropout on_shared(0.5f, shared);
  on_shared(constant(ones));
  CHECK(shared.offset() == static_cast<uint64_t>(ones.numel()));
  CHECK_THROWS_AS(Dropout(1.0f), Error);
  tape().clear();
}

TEST_CASE("GaussianNoise: N(0, σ²) added in training, identity in eval, gradient passes through") {
  const float sigma = 0.15f;  // the CIFAR input noise
  GaussianNoise noise(sigma, 3);
  Tensor base = Tensor::full(Shape{200, 500}, 2.0f);
  Var x = parameter(base.clone());
  Var y = noise(x);
  Tensor added = y.value().clone();
  added.add_(base, -1.0f);
  Moments m = moments(added);
  // n = 1e5: sd of the mean σ/√n = 4.7e-4, relative sd of the std 1/√(2n) = 0.22%.
  CHECK(std::fabs(m.mean) < 2.5e-3);
  CHECK(std::sqrt(m.variance) == doctest::Approx(sigma).epsilon(0.015));

  Generator gen(4);
  Tensor r = normal(y.shape(), 0.0f, 1.0f, gen);
  tape().backward(y, r);
  CHECK(max_abs_diff(x.grad(), r) == 0.0f);
  tape().clear();

  GaussianNoise same_seed(sigma, 3);
  CHECK(max_abs_diff(same_seed(constant(base)).value(), y.value()) == 0.0f);

  noise.eval();
  CHECK(noise(x).node() == x.node());
  CHECK_THROWS_AS(GaussianNoise(-0.1f), Error);
}

// ------------------------------------------------------------ activations

TEST_CASE("activate: every kind is the op it names") {
  Tensor t = Tensor::from(Shape{4}, {-2.0f, -0.5f, 0.5f, 2.0f});
  Var x = constant(t);
  CHECK(activate(x, Activation::Identity).node() == x.node());
  CHECK(max_abs_diff(activate(x, Activation::ReLU).value(), relu(x).value()) == 0.0f);
  CHECK(activate(x, Activation::LeakyReLU).value().at({0}) == doctest::Approx(-0.2f));
  CHECK(activate(x, Activation::LeakyReLU, 0.01f).value().at({0}) == doctest::Approx(-0.02f));
  CHECK(max_abs_diff(activate(x, Activation::Tanh).value(), tanh(x).value()) == 0.0f);
  CHECK(max_abs_diff(activate(x, Activation::Sigmoid).value(), sigmoid(x).value()) == 0.0f);
}

// ---------------------------------------------------------------- Flatten

TEST_CASE("Flatten against torch.nn.Flatten: shapes, values and the gradient, to the bit") {
  // A reshape moves no float and its backward hands the gradient back in the
  // input's shape, so output and gradient equal torch's exactly (the JSON's
  // 9 digits hold a float32 exactly).
  nlohmann::json ref = test::load_reference("layers_basic.json");
  int checked = 0;
  for (const auto& c : ref["cases"]) {
    if (c["kind"] != "flatten") continue;
    const std::string name = c["name"];
    INFO(name);
    Flatten flatten(c["start"].get<int>(), c["end"].get<int>());
    CHECK(parameter_names(flatten).empty());
    Var x = parameter(test::tensor_from_json(c["x"]));
    Var y = flatten(x);
    tape().backward(y, test::tensor_from_json(c["projection"]));
    tape().clear();
    test::all_close(y.value(), test::tensor_from_json(c["output"]), 0.0f, 0.0f, "output");
    test::all_close(x.grad(), test::tensor_from_json(c["grad_x"]), 0.0f, 0.0f, "grad x");
    ++checked;
  }
  CHECK(checked == 6);

  // In a Sequential: [N, C, H, W] → [N, C·H·W] → Linear, with torch's default dims.
  Generator gen(13);
  Sequential net;
  net.add(std::make_shared<Flatten>());
  net.add(std::make_shared<Linear>(12, 2, gen));
  CHECK(parameter_names(net) == std::vector<std::string>{"1.weight", "1.bias"});
  CHECK(net(constant(Tensor::zeros(Shape{5, 3, 2, 2}))).shape() == Shape{5, 2});
  tape().clear();

  Var x = constant(Tensor::zeros(Shape{2, 3, 4}));
  CHECK_THROWS_WITH_AS(Flatten(1, 3)(x), "flatten: axes 1..3 are out of range for [2, 3, 4]", Error);
  CHECK_THROWS_WITH_AS(Flatten(-4)(x), "flatten: axes -4..-1 are out of range for [2, 3, 4]", Error);
  CHECK_THROWS_WITH_AS(Flatten(2, 1)(x), "flatten: start axis 2 comes after end axis 1 in [2, 3, 4]", Error);
  CHECK_THROWS_WITH_AS(Flatten()(constant(Tensor::zeros(Shape{4}))),
                       "flatten: axes 1..-1 are out of range for [4]", Error);
  // A scalar has the dims of rank 1, as in torch: Flatten(0, −1) gives [1], Flatten() is out of range.
  CHECK(Flatten(0, -1)(constant(Tensor::scalar(3.0f))).shape() == Shape{1});
  CHECK_THROWS_WITH_AS(Flatten()(constant(Tensor::scalar(3.0f))),
                       "flatten: axes 1..-1 are out of range for []", Error);
}
