// A differentiable op of your own, written outside the library with its
// public headers: log_sigmoid(x) = log σ(x) = −log(1 + e⁻ˣ). Its two kernels,
// its record on the tape, a gradient check, and its values and gradient
// against PyTorch's. docs/writing_an_op.md walks through it; CTest runs it
// (example_custom_op).
//
//   y  = −log(1 + e⁻ˣ) = min(x, 0) − log(1 + e^−|x|)   never overflows
//   y′ = e⁻ˣ / (1 + e⁻ˣ) = σ(−x) = 1 − eʸ              read from the output
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

  // The formulas as written, for comparison: the value −log(1 + e⁻ˣ), the gradient 1 − eʸ.
  std::printf("\n%8s %16s %16s %16s %15s %15s\n", "x", "log_sigmoid", "torch", "-log(1+exp(-x))",
              "gradient", "1 - exp(y)");
  for (size_t i = 0; i < kX.size(); ++i)
    std::printf("%8g %16.9g %16.9g %16.9g %15.9g %15.9g\n", kX[i], values.data()[i],
                kLogSigmoid[i], -std::log(1.0f + std::exp(-kX[i])), px.grad().data()[i],
                1.0f - std::exp(values.data()[i]));
  return failures == 0 ? 0 : 1;
}
