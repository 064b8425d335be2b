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
//   gelu     y = x Φ(x)           f' = Φ(x) + x φ(x)
//   gelu~    y = x σ(2u)          f' = σ(2u) + 2x σ(2u)(1 − σ(2u)) u'
//   silu     y = x σ(x)           f' = σ(x) (1 + x (1 − σ(x)))
//   softplus y = log(1 + e^βx)/β  f' = σ(βx)      (y = x, f' = 1 where βx > threshold)
//   pow      y = xᵖ               f' = p xᵖ⁻¹     (0 when p = 0)
//
// and one gated form, the feed-forward of LLaMA (Shazeer 2020), written here
// beside the silu it gates:
//
//   swiglu   y = silu(a) b        ∂y/∂a = b σ(a) (1 + a (1 − σ(a)))    ∂y/∂b = silu(a)
//
// One pass forward and one backward, where silu(a) * b would be two of each
// and keep silu(a) for the product's backward.
//
// Φ is the standard normal CDF, Φ(x) = erfc(−x/√2)/2, and φ = Φ' its density
// e^(−x²/2)/√(2π). Written with erfc, Φ keeps its relative precision for
// negative x, where 1 + erf(x/√2) would cancel (at x = −5, to one digit).
// gelu~ is the tanh approximation, u = √(2/π)(x + 0.044715 x³): its
// (1 + tanh u)/2 is σ(2u), which does not cancel for negative u either.
// softplus is evaluated as (max(βx, 0) + log1p(e^−|βx|))/β, whose exp sees
// only arguments ≤ 0, so it neither overflows nor rounds e^βx away against 1.
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

Var gelu(const Var& x, GeluApprox approximate) {
  constexpr float kInvSqrt2 = 0.70710678118654752f, kInvSqrt2Pi = 0.39894228040143268f;
  if (approximate == GeluApprox::None)
    return unary("gelu", x, kGrainHeavy, [](float v) { return 0.5f * v * std::erfc(-v * kInvSqrt2); },
                 [](float v, float) {
                   return 0.5f * std::erfc(-v * kInvSqrt2) + v * kInvSqrt2Pi * std::exp(-0.5f * v * v);
                 });
  constexpr float kSqrt2OverPi = 0.79788456080286536f, kCubic = 0.044715f;
  return unary("gelu_tanh", x, kGrainHeavy,
               [](float v) { return v * fast_sigmoid(2.0f * kSqrt2OverPi * (v + kCubic * v * v * v)); },
               [](float v, float) {
                 const float s = fast_sigmoid(2.0f * kSqrt2OverPi * (v + kCubic * v * v * v));
                 const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
                 return s + 2.0f * v * s * (1.0f - s) * du;
               });
}

Var silu(const Var& x) {
  return unary("silu", x, kGrainHeavy, [](float v) { return v * fast_sigmoid(v); },
               [](float v, float) {
                 const float s = fast_sigmoid(v);
                 return s * (1.0f + v * (1.0f - s));
               });
}

namespace {

// What a backward does with one input's gradient: nothing (the input wants
// none), write it (a fresh buffer) or add to it.
enum GradMode { kSkip = 0, kAssign = 1, kAdd = 2 };
GradMode grad_mode(const Tensor* grad, bool fresh) { return !grad ? kSkip : fresh ? kAssign : kAdd; }

template <GradMode A, GradMode B>
void swiglu_grads(const float* x, const float* v, const float* g, float* dx, float* dv, int64_t lo, int64_t hi) {
  // Both gradients in one pass: each of x, v and g is read once.
#pragma omp simd
  for (int64_t i = lo; i < hi; ++i) {
    const float s = fast_sigmoid(x[i]);
    if constexpr (A != kSkip) {
      const float ga = g[i] * v[i] * (s * (1.0f + x[i] * (1.0f - s)));
      if constexpr (A == kAssign) dx[i] = ga;
      else dx[i] += ga;
    }
    if constexpr (B != kSkip) {
      const float gb = g[i] * (x[i] * s);
      if constexpr (B == kAssign) dv[i] = gb;
      else dv[i] += gb;
    }
  }
}

using SwigluGradKernel = void (*)(const float*, const float*, const float*, float*, float*, int64_t, int64_t);
constexpr SwigluGradKernel kSwigluGradKernels[3][3] = {
    {swiglu_grads<kSkip, kSkip>, swiglu_grads<kSkip, kAssign>, swiglu_grads<kSkip, kAdd>},
    {swiglu_grads<kAssign, kSkip>, swiglu_grads<kAssign, kAssign>, swiglu_grads<kAssign, kAdd>},
    {swiglu_grads<kAdd, kSkip>, swiglu_grads<kAdd, kAssign>, swiglu_grads<kAdd, kAdd>},
};

}  // namespace

Var swiglu(const Var& a, const Var& b) {
  check(a.defined() && b.defined(), "swiglu: undefined input");
  check(a.shape() == b.shape(), "swiglu: gate {} and value {} must have one shape", a.shape(), b.shape());
  Tensor out = Tensor::empty(a.shape());
  const float *pa = a.value().data(), *pb = b.value().data();
  float* py = out.data();
  parallel_for(out.numel(), kGrainHeavy, [&](int64_t lo, int64_t hi) {
    const float *gate = pa, *value = pb;
    float* y = py;
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) y[i] = gate[i] * fast_sigmoid(gate[i]) * value[i];
  });
  return tape().record("swiglu", std::move(out), {a, b}, [](Node& n) {
    bool fresh_a = false, fresh_b = false;
    Tensor* da = n.input_grad(0, fresh_a);
    Tensor* db = n.input_grad(1, fresh_b);
    const SwigluGradKernel kernel = kSwigluGradKernels[grad_mode(da, fresh_a)][grad_mode(db, fresh_b)];
    const float *gate = n.inputs[0]->value.data(), *value = n.inputs[1]->value.data(), *g = n.grad.data();
    float* pda = da ? da->data() : nullptr;
    float* pdb = db ? db->data() : nullptr;
    parallel_for(n.value.numel(), kGrainHeavy,
                 [&](int64_t lo, int64_t hi) { kernel(gate, value, g, pda, pdb, lo, hi); });
  });
}

Var softplus(const Var& x, float beta, float threshold) {
  check(beta != 0.0f && std::isfinite(beta), "softplus: beta must be finite and non-zero, got {}", beta);
  return unary(
      "softplus", x, kGrainHeavy,
      [beta, threshold](float v) {
        const float z = beta * v;
        const float smooth = (branchless_select(z > 0.0f, z, 0.0f) + std::log1p(std::exp(-std::fabs(z)))) / beta;
        return branchless_select(z > threshold, v, smooth);
      },
      [beta, threshold](float v, float) {
        const float z = beta * v;
        return branchless_select(z > threshold, 1.0f, 1.0f / (1.0f + std::exp(-z)));
      });
}

Var pow(const Var& x, float exponent) {
  const float p = exponent;
  if (p == 0.0f)  // x⁰ = 1 for every x (0⁰ and NaN⁰ included), a constant
    return unary("pow", x, kGrainElementwise, [](float v) { return std::pow(v, 0.0f); },
                 [](float, float) { return 0.0f; });
  return unary("pow", x, kGrainHeavy, [p](float v) { return std::pow(v, p); },
               [p](float v, float) { return p * std::pow(v, p - 1.0f); });
}

}  // namespace rg
