// Elementwise unary ops. For y = f(x) the backward is dx += g · f'(x), and
// f' is written from whichever of x and y makes it cheapest:
//
//   neg      y = -x               f' = -1
//   exp      y = eˣ               f' = y
//   log      y = ln x             f' = 1 / x
//   tanh     y = tanh x           f' = 1 - y²
//   sigmoid  y = 1 / (1 + e⁻ˣ)    f' = y (1 - y)
//   relu     y = max(x, 0)        f' = [x > 0]
//   leaky    y = x or slope·x     f' = 1 or slope
//   sqrt     y = √x               f' = 1 / (2y)
//   rsqrt    y = 1 / √x           f' = -y³ / 2
//   square   y = x²               f' = 2x
//   abs      y = |x|              f' = sign(x) (0 at 0)
//   clamp    y = min(max(x,lo),hi) f' = [lo ≤ x ≤ hi]
//   s - x    y = s - x            f' = -1
//
// The output y is the node's own value, so nothing extra is saved. Piecewise
// functions are written as a select between constants times plain arithmetic
// (leaky: x · select(x > 0, 1, slope)), the select done on the bits
// (branchless_select, core/fast_math.h) so that the loops vectorise; a branch
// on the sign would cost a misprediction on every other element of real data.
#include <cmath>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/fast_math.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

template <class Fwd, class Deriv>
Var unary(const char* op, const Var& x, int64_t grain, Fwd fwd, Deriv deriv) {
  check(x.defined(), "{}: undefined input", op);
  Tensor out = Tensor::empty(x.shape());
  const float* px = x.value().data();
  float* py = out.data();
  // The loops work on local copies of the pointers and of the function
  // (leaky's slope): read through the closure, each store to y might change
  // them as far as GCC can tell, and it would not vectorise.
  parallel_for(out.numel(), grain, [&](int64_t lo, int64_t hi) {
    const Fwd f = fwd;
    const float* in = px;
    float* y = py;
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) y[i] = f(in[i]);
  });
  return tape().record(op, std::move(out), {x}, [deriv, grain](Node& n) {
    bool fresh = false;
    Tensor* dx = n.input_grad(0, fresh);
    if (!dx) return;
    const float* xv = n.inputs[0]->value.data();
    const float* yv = n.value.data();
    const float* g = n.grad.data();
    float* d = dx->data();
    parallel_for(n.value.numel(), grain, [&](int64_t lo, int64_t hi) {
      const Deriv df = deriv;
      const float *x_in = xv, *y_in = yv, *g_in = g;
      float* dx_out = d;
      if (fresh) {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) dx_out[i] = g_in[i] * df(x_in[i], y_in[i]);
      } else {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) dx_out[i] += g_in[i] * df(x_in[i], y_in[i]);
      }
    });
  });
}

}  // namespace

Var neg(const Var& x) {
  return unary("neg", x, kGrainElementwise, [](float v) { return -v; }, [](float, float) { return -1.0f; });
}

Var exp(const Var& x) {
  return unary("exp", x, kGrainHeavy, [](float v) { return fast_exp(v); }, [](float, float y) { return y; });
}

Var log(const Var& x) {
  return unary("log", x, kGrainHeavy, [](float v) { return std::log(v); }, [](float v, float) { return 1.0f / v; });
}

Var tanh(const Var& x) {
  return unary("tanh", x, kGrainHeavy, [](float v) { return fast_tanh(v); },
               [](float, float y) { return 1.0f - y * y; });
}

Var sigmoid(const Var& x) {
  return unary("sigmoid", x, kGrainHeavy, [](float v) { return fast_sigmoid(v); },
               [](float, float y) { return y * (1.0f - y); });
}

Var relu(const Var& x) {
  return unary("relu", x, kGrainElementwise, [](float v) { return branchless_select(v < 0, 0.0f, v); },
               [](float v, float) { return branchless_select(v > 0, 1.0f, 0.0f); });
}

Var leaky_relu(const Var& x, float slope) {
  return unary("leaky_relu", x, kGrainElementwise,
               [slope](float v) { return v * branchless_select(v > 0, 1.0f, slope); },
               [slope](float v, float) { return branchless_select(v > 0, 1.0f, slope); });
}

Var sqrt(const Var& x) {
  return unary("sqrt", x, kGrainHeavy, [](float v) { return std::sqrt(v); },
               [](float, float y) { return 0.5f / y; });
}

Var rsqrt(const Var& x) {
  return unary("rsqrt", x, kGrainHeavy, [](float v) { return 1.0f / std::sqrt(v); },
               [](float, float y) { return -0.5f * y * y * y; });
}

Var square(const Var& x) {
  return unary("square", x, kGrainElementwise, [](float v) { return v * v; },
               [](float v, float) { return 2.0f * v; });
}

Var abs(const Var& x) {
  return unary("abs", x, kGrainElementwise, [](float v) { return std::fabs(v); },
               [](float v, float) { return v > 0 ? 1.0f : (v < 0 ? -1.0f : 0.0f); });
}

Var clamp(const Var& x, float lo, float hi) {
  check(lo <= hi, "clamp: lo {} is greater than hi {}", lo, hi);
  return unary("clamp", x, kGrainElementwise, [lo, hi](float v) { return v < lo ? lo : (v > hi ? hi : v); },
               [lo, hi](float v, float) { return (v >= lo && v <= hi) ? 1.0f : 0.0f; });
}

Var scalar_sub(float s, const Var& x) {
  return unary("scalar_sub", x, kGrainElementwise, [s](float v) { return s - v; },
               [](float, float) { return -1.0f; });
}

}  // namespace rg
