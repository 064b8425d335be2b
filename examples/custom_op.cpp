// Differentiable ops of your own, written outside the library with its
// public headers: log_sigmoid(x) = log σ(x) = −log(1 + e⁻ˣ), and an op of two
// inputs, logaddexp(a, b) = log(eᵃ + eᵇ). Their kernels, their records on the
// tape, gradient checks, and their values and gradients against PyTorch's.
// docs/writing_an_op.md walks through them; CTest runs it (example_custom_op).
//
//   y  = −log(1 + e⁻ˣ) = min(x, 0) − log(1 + e^−|x|)   never overflows
//   y′ = e⁻ˣ / (1 + e⁻ˣ) = σ(−x) = 1 − eʸ              read from the output
//
//   z  = log(eᵃ + eᵇ) = max(a, b) + log(1 + e^−|a−b|)  never overflows
//   ∂z/∂a = eᵃ / (eᵃ + eᵇ) = e^(a−z),  ∂z/∂b = e^(b−z)  (they sum to 1)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "rmsgrad/rmsgrad.h"

using namespace rg;

// ---- the kernels: plain loops over float*, forward and backward side by side

// y = min(x, 0) − log1p(e^−|x|).                                      x, y: [n]
void log_sigmoid_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::min(x[i], 0.0f) - std::log1p(std::exp(-std::fabs(x[i])));
}

// dx += dy · σ(−x), with σ(−x) = 1 − eʸ = −expm1(y).             y, dy, dx: [n]
// `assign`: dx is a fresh, uninitialised buffer to write, not one to add into.
void log_sigmoid_backward(const float* y, const float* dy, float* dx, int64_t n, bool assign) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = dy[i] * -std::expm1(y[i]);
    dx[i] = assign ? g : dx[i] + g;
  }
}

// ---- the op: run the forward kernel, record the node with its backward

Var log_sigmoid(const Var& x) {
  check(x.defined(), "log_sigmoid: undefined input");
  Tensor y = Tensor::empty(x.shape());
  log_sigmoid_forward(x.value().data(), y.data(), x.numel());
  return tape().record("log_sigmoid", std::move(y), {x}, [](Node& n) {
    bool assign = false;
    Tensor* dx = n.input_grad(0, assign);
    if (!dx) return;  // x needs no gradient
    log_sigmoid_backward(n.value.data(), n.grad.data(), dx->data(), n.value.numel(), assign);
  });
}

// ---- an op of two inputs: both gradients from one backward

// z = max(a, b) + log1p(e^−|a−b|).                                 a, b, z: [n]
void logaddexp_forward(const float* a, const float* b, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = std::max(a[i], b[i]) + std::log1p(std::exp(-std::fabs(a[i] - b[i])));
}

// dx += dz · e^(x−z), for x = a or b (each input's own call).     x, z, dz, dx: [n]
void logaddexp_backward(const float* x, const float* z, const float* dz, float* dx, int64_t n, bool assign) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = dz[i] * std::exp(x[i] - z[i]);
    dx[i] = assign ? g : dx[i] + g;
  }
}

Var logaddexp(const Var& a, const Var& b) {
  check(a.defined() && b.defined(), "logaddexp: undefined input");
  check(a.shape() == b.shape(), "logaddexp: a is {} and b is {}; give two tensors of one shape", a.shape(),
        b.shape());
  Tensor z = Tensor::empty(a.shape());
  logaddexp_forward(a.value().data(), b.value().data(), z.data(), a.numel());
  return tape().record("logaddexp", std::move(z), {a, b}, [](Node& n) {
    // The inputs' values stay reachable through n.inputs; each input gets its
    // gradient only if it needs one (a constant does not).
    for (size_t i = 0; i < 2; ++i) {
      bool assign = false;
      Tensor* dx = n.input_grad(i, assign);
      if (!dx) continue;
      logaddexp_backward(n.inputs[i]->value.data(), n.value.data(), n.grad.data(), dx->data(), n.value.numel(),
                         assign);
    }
  });
}

// ---- the checks

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("%-62s %s\n", what, ok ? "ok" : "FAILED");
  failures += ok ? 0 : 1;
}

// |got − want| ≤ rtol·|want|, for every element.
bool close(const Tensor& got, const std::vector<float>& want, float rtol) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(got.data()[i] - want[i]) <= rtol * std::fabs(want[i]))) return false;
  return true;
}

}  // namespace

int main() {
  // 1. The backward against central differences of the forward (autograd/gradcheck.h).
  Generator gen(7);
  Tensor x = normal(Shape{3, 4}, 0.0f, 3.0f, gen);
  GradCheckResult once = gradcheck([](const std::vector<Var>& v) { return log_sigmoid(v[0]); }, {x});
  expect(once.ok, "gradcheck log_sigmoid(x)");
  // Used twice: the first backward writes x's fresh gradient, the second adds to it.
  GradCheckResult twice =
      gradcheck([](const std::vector<Var>& v) { return log_sigmoid(v[0]) + log_sigmoid(v[0]); }, {x});
  expect(twice.ok, "gradcheck log_sigmoid(x) + log_sigmoid(x)");
  for (const GradCheckResult* r : {&once, &twice})
    if (!r->ok) std::printf("  %s\n", r->report.c_str());
  // A fresh buffer may happen to hold zeros, so the assign path gets a test of
  // its own: given a dx full of NaN, it must write every element, reading none.
  Tensor y0 = Tensor::empty(x.shape()), dy = Tensor::ones(x.shape()), dx = Tensor::full(x.shape(), NAN);
  log_sigmoid_forward(x.data(), y0.data(), x.numel());
  log_sigmoid_backward(y0.data(), dy.data(), dx.data(), x.numel(), true);
  expect(std::all_of(dx.data(), dx.data() + dx.numel(), [](float v) { return std::isfinite(v); }),
         "the assign path writes dx without reading it");

  // The op of two inputs: both gradients at once, one input used for both,
  // and a constant input, which gets no gradient.
  Tensor b = normal(Shape{3, 4}, 0.0f, 3.0f, gen);
  GradCheckResult pair = gradcheck([](const std::vector<Var>& v) { return logaddexp(v[0], v[1]); }, {x, b});
  expect(pair.ok, "gradcheck logaddexp(a, b)");
  GradCheckResult same = gradcheck([](const std::vector<Var>& v) { return logaddexp(v[0], v[0]); }, {x});
  expect(same.ok, "gradcheck logaddexp(a, a)");
  GradCheckResult one = gradcheck([&](const std::vector<Var>& v) { return logaddexp(v[0], constant(b)); }, {x});
  expect(one.ok, "gradcheck logaddexp(a, constant)");
  for (const GradCheckResult* r : {&pair, &same, &one})
    if (!r->ok) std::printf("  %s\n", r->report.c_str());

  // 2. Values and gradient against PyTorch's.
  // From examples/custom_op_reference.py (torch 2.15.0, float64).
  const std::vector<float> kX = {
      -100.0f, -20.0f, -5.0f, -1.0f, -0.25f,
      0.0f, 0.25f, 1.0f, 5.0f, 20.0f};
  const std::vector<float> kLogSigmoid = {
      -100.0f, -20.0f, -5.00671535f, -1.31326169f, -0.82593942f,
      -0.693147181f, -0.57593942f, -0.313261688f, -0.00671534849f, -2.06115362e-09f};
  const std::vector<float> kSigmoidNegX = {
      1.0f, 0.999999998f, 0.993307149f, 0.731058579f, 0.562176501f,
      0.5f, 0.437823499f, 0.268941421f, 0.00669285092f, 2.06115362e-09f};
  Var px = parameter(Tensor::from(Shape{static_cast<int64_t>(kX.size())}, kX));
  Var y = log_sigmoid(px);
  Tensor values = y.value();
  sum(y).backward();  // d sum(log_sigmoid(x)) / dx_i = σ(−x_i)
  expect(close(values, kLogSigmoid, 1e-6f), "log_sigmoid(x) equals torch's to 1e-6 relative");
  expect(close(px.grad(), kSigmoidNegX, 1e-6f), "its gradient equals torch's sigmoid(-x) to 1e-6 relative");

  // logaddexp against torch.logaddexp, with its two gradients.
  // From examples/custom_op_reference.py (torch 2.15.0, float64).
  const std::vector<float> kA = {
      -100.0f, -2.0f, -3.0f, -1.0f, 0.0f,
      0.0f, 0.5f, 2.0f, 3.0f, 7.0f};
  const std::vector<float> kB = {
      100.0f, -2.5f, 4.0f, -1.0f, 0.0f,
      0.00100000005f, -0.5f, 1.0f, 2.5f, 8.0f};
  const std::vector<float> kLogAddExp = {
      100.0f, -1.52592302f, 4.00091147f, -0.306852819f, 0.693147181f,
      0.693647306f, 0.813261688f, 2.31326169f, 3.47407698f, 8.31326169f};
  const std::vector<float> kDA = {
      0.0f, 0.622459331f, 0.000911051194f, 0.5f, 0.5f,
      0.49975f, 0.731058579f, 0.731058579f, 0.622459331f, 0.268941421f};
  const std::vector<float> kDB = {
      1.0f, 0.377540669f, 0.999088949f, 0.5f, 0.5f,
      0.50025f, 0.268941421f, 0.268941421f, 0.377540669f, 0.731058579f};
  Var pa = parameter(Tensor::from(Shape{static_cast<int64_t>(kA.size())}, kA));
  Var pb = parameter(Tensor::from(Shape{static_cast<int64_t>(kB.size())}, kB));
  Var z = logaddexp(pa, pb);
  Tensor z_values = z.value();
  sum(z).backward();
  expect(close(z_values, kLogAddExp, 1e-6f), "logaddexp(a, b) equals torch's to 1e-6 relative");
  expect(close(pa.grad(), kDA, 2e-6f) && close(pb.grad(), kDB, 2e-6f),
         "its gradients in a and b equal torch's to 2e-6 relative");

  // The formulas as written, for comparison: the value −log(1 + e⁻ˣ), the gradient 1 − eʸ.
  std::printf("\n%8s %16s %16s %16s %15s %15s\n", "x", "log_sigmoid", "torch", "-log(1+exp(-x))",
              "gradient", "1 - exp(y)");
  for (size_t i = 0; i < kX.size(); ++i)
    std::printf("%8g %16.9g %16.9g %16.9g %15.9g %15.9g\n", kX[i], values.data()[i],
                kLogSigmoid[i], -std::log(1.0f + std::exp(-kX[i])), px.grad().data()[i],
                1.0f - std::exp(values.data()[i]));
  return failures == 0 ? 0 : 1;
}
