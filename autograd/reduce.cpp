// Reductions over one axis, several axes or everything.
//
// x is viewed as [outer, D, inner] around the reduced axis (D its length):
//
//   sum   y[o, i] = Σ_d x[o, d, i]        dx[o, d, i] += g[o, i]
//   mean  y[o, i] = Σ_d x[o, d, i] / D    dx[o, d, i] += g[o, i] / D
//   max   y[o, i] = x[o, d*, i]           dx[o, d*, i] += g[o, i]
//   min   the same, d* the first minimum
//
// max and min save the winning d* of every output (the first, on ties; NaN
// wins, so it propagates). argmax and argmin return those d* and record
// nothing. keepdim keeps the reduced axis with length 1. Sums over everything
// accumulate in double, so a long sum does not lose the small terms.
//
// Over several axes at once, each output k gathers the n elements x[b_k + o_r]
// (b_k from its kept indices, o_r from the reduced ones, each Σ index·stride):
//
//   sum   y_k = Σ_r x_kr                       dx_kr += g_k
//   mean  y_k = Σ_r x_kr / n                   dx_kr += g_k / n
//   var   m_k = Σ_r x_kr / n,  y_k = Σ_r (x_kr − m_k)² / (n − c)
//                                              dx_kr += g_k · 2 (x_kr − m_k) / (n − c)
//   std   s_k = √var_k                         dx_kr += g_k · (x_kr − m_k) / ((n − c) s_k),  0 if s_k = 0
//
// (the mean's own dependence on x drops out of var's gradient, because
// Σ_r (x_kr − m_k) = 0). var saves m in double, so that x − m does not
// inherit m's rounding; the sums are in double, two passes.
//
// max and min over everything give the gradient to every element equal to the
// result, g / (their count) each, as torch does.
#include <cmath>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

struct AxisView {
  int64_t outer, len, inner;
};

AxisView view_around(const Shape& s, int axis) { return {s.outer(axis), s[axis], s.inner(axis)}; }

Shape reduced_shape(const Shape& s, int axis, bool keepdim) { return keepdim ? s.with(axis, 1) : s.without(axis); }

// The axis in [0, rank), or an error naming the op.
int axis_of(const char* op, const Shape& s, int axis) {
  check(axis >= -s.rank() && axis < s.rank(), "{}: axis {} is out of range for {}", op, axis, s);
  return axis < 0 ? axis + s.rank() : axis;
}

// y[o, i] = scale · Σ_d x[o, d, i]
Tensor sum_axis_forward(const Tensor& x, const AxisView& v, float scale, const Shape& out_shape) {
  Tensor y = Tensor::zeros(out_shape);
  const float* px = x.data();
  float* py = y.data();
  parallel_for(v.outer, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, v.len * v.inner)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t o = lo; o < hi; ++o) {
                   float* row = py + o * v.inner;
                   for (int64_t d = 0; d < v.len; ++d) {
                     const float* src = px + (o * v.len + d) * v.inner;
                     for (int64_t i = 0; i < v.inner; ++i) row[i] += src[i];
                   }
                   for (int64_t i = 0; i < v.inner; ++i) row[i] *= scale;
                 }
               });
  return y;
}

// dx[o, d, i] += scale · g[o, i]
void sum_axis_backward(Tensor& dx, const Tensor& g, const AxisView& v, float scale) {
  float* pd = dx.data();
  const float* pg = g.data();
  parallel_for(v.outer, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, v.len * v.inner)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t o = lo; o < hi; ++o)
                   for (int64_t d = 0; d < v.len; ++d) {
                     float* dst = pd + (o * v.len + d) * v.inner;
                     const float* src = pg + o * v.inner;
                     for (int64_t i = 0; i < v.inner; ++i) dst[i] += scale * src[i];
                   }
               });
}

Var reduce_axis(const char* op, const Var& x, int axis, bool keepdim, bool average) {
  check(x.defined(), "{}: undefined input", op);
  check(x.rank() >= 1, "{}: cannot reduce an axis of a scalar", op);
  int a = axis_of(op, x.shape(), axis);
  AxisView v = view_around(x.shape(), a);
  float scale = average ? 1.0f / static_cast<float>(std::max<int64_t>(v.len, 1)) : 1.0f;
  check(!average || v.len > 0, "{}: mean over an empty axis {} of {}", op, axis, x.shape());
  Tensor y = sum_axis_forward(x.value(), v, scale, reduced_shape(x.shape(), a, keepdim));
  return tape().record(op, std::move(y), {x}, [v, scale](Node& n) {
    if (Tensor* dx = n.input_grad(0)) sum_axis_backward(*dx, n.grad, v, scale);
  });
}

Var reduce_all(const char* op, const Var& x, bool average) {
  check(x.defined(), "{}: undefined input", op);
  check(!average || x.numel() > 0, "{}: mean of an empty tensor", op);
  const float* px = x.value().data();
  const int64_t n = x.numel();
  // Fixed chunks, so the result does not depend on the thread count.
  const int64_t chunk = 1 << 16;
  const int64_t chunks = (n + chunk - 1) / chunk;
  std::vector<double> chunk_sum(chunks, 0.0);
  parallel_for(chunks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      double acc = 0.0;
      for (int64_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i) acc += px[i];
      chunk_sum[c] = acc;
    }
  });
  double total = 0.0;
  for (double s : chunk_sum) total += s;
  float scale = average ? 1.0f / static_cast<float>(n) : 1.0f;
  Tensor y = Tensor::scalar(static_cast<float>(total * scale));
  return tape().record(op, std::move(y), {x}, [scale](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    float g = n.grad.data()[0] * scale;
    float* d = dx->data();
    parallel_for(dx->numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) d[i] += g;
    });
  });
}

// ---- several axes ----

// Where the elements of each output lie: output k reduces x[base[k] + offset[r]]
// for r < offset.size().
struct AxesPlan {
  Shape out;
  std::vector<int64_t> base, offset;
  int64_t count() const { return static_cast<int64_t>(offset.size()); }
};

// Σ index·stride for every combination of indices over `dims`, row-major.
std::vector<int64_t> offsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
  std::vector<int64_t> out{0};
  for (size_t a = 0; a < dims.size(); ++a) {
    std::vector<int64_t> next;
    next.reserve(out.size() * dims[a]);
    for (int64_t o : out)
      for (int64_t j = 0; j < dims[a]; ++j) next.push_back(o + j * strides[a]);
    out = std::move(next);
  }
  return out;
}

AxesPlan plan_axes(const char* op, const Shape& s, const std::vector<int>& axes, bool keepdim) {
  std::vector<bool> reduced(s.rank(), axes.empty());  // no axes listed: every axis
  for (int axis : axes) {
    int a = axis_of(op, s, axis);
    check(!reduced[a], "{}: axis {} is listed twice for {}", op, axis, s);
    reduced[a] = true;
  }
  const auto strides = s.strides();
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides, out_dims;
  for (int a = 0; a < s.rank(); ++a) {
    (reduced[a] ? red_dims : kept_dims).push_back(s[a]);
    (reduced[a] ? red_strides : kept_strides).push_back(strides[a]);
    if (!reduced[a] || keepdim) out_dims.push_back(reduced[a] ? 1 : s[a]);
  }
  return {Shape(out_dims), offsets(kept_dims, kept_strides), offsets(red_dims, red_strides)};
}

// The sum (times scale) of every output's elements, in double.
Tensor sum_axes_forward(const Tensor& x, const AxesPlan& p, double scale) {
  Tensor y = Tensor::empty(p.out);
  const float* px = x.data();
  float* py = y.data();
  parallel_for(y.numel(), std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, p.count())),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t k = lo; k < hi; ++k) {
                   const float* xk = px + p.base[k];
                   double acc = 0.0;
                   for (int64_t o : p.offset) acc += xk[o];
                   py[k] = static_cast<float>(acc * scale);
                 }
               });
  return y;
}

Var reduce_axes(const char* op, const Var& x, const std::vector<int>& axes, bool keepdim, bool average) {
  check(x.defined(), "{}: undefined input", op);
  if (axes.size() == 1) return reduce_axis(op, x, axes[0], keepdim, average);  // the one-axis kernel
  auto plan = std::make_shared<AxesPlan>(plan_axes(op, x.shape(), axes, keepdim));
  check(!average || plan->count() > 0, "{}: mean over empty axes of {}", op, x.shape());
  const double scale = average ? 1.0 / static_cast<double>(plan->count()) : 1.0;
  Tensor y = sum_axes_forward(x.value(), *plan, scale);
  return tape().record(op, std::move(y), {x}, [plan, scale](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float* g = n.grad.data();
    float* d = dx->data();
    parallel_for(n.value.numel(), std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, plan->count())),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t k = lo; k < hi; ++k) {
                     const float gk = static_cast<float>(g[k] * scale);
                     float* dk = d + plan->base[k];
                     for (int64_t o : plan->offset) dk[o] += gk;
                   }
                 });
  });
}

// var (or std, when `root`) with the given correction; see the header.
Var spread_axes(const char* op, const Var& x, const std::vector<int>& axes, int correction, bool keepdim, bool root) {
  check(x.defined(), "{}: undefined input", op);
  auto plan = std::make_shared<AxesPlan>(plan_axes(op, x.shape(), axes, keepdim));
  const int64_t n = plan->count();
  check(n - correction > 0, "{}: correction {} leaves no degrees of freedom for {} elements per result of {}", op,
        correction, n, x.shape());
  const double dof = static_cast<double>(n - correction);
  Tensor y = Tensor::empty(plan->out);
  auto mean = std::make_shared<std::vector<double>>(y.numel());  // in double: x − m must not round m
  const float* px = x.value().data();
  float* py = y.data();
  parallel_for(y.numel(), std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, n)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t k = lo; k < hi; ++k) {
                   const float* xk = px + plan->base[k];
                   double total = 0.0, squares = 0.0;
                   for (int64_t o : plan->offset) total += xk[o];
                   const double m = total / static_cast<double>(n);
                   for (int64_t o : plan->offset) squares += (xk[o] - m) * (xk[o] - m);
                   (*mean)[k] = m;
                   py[k] = static_cast<float>(root ? std::sqrt(squares / dof) : squares / dof);
                 }
               });
  return tape().record(op, std::move(y), {x}, [plan, mean, dof, root](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float* x = n.inputs[0]->value.data();
    const float* y = n.value.data();
    const float* g = n.grad.data();
    float* d = dx->data();
    parallel_for(n.value.numel(), std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, plan->count())),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t k = lo; k < hi; ++k) {
                     // var: 2 g / (n − c);  std: g / ((n − c) s), and 0 where s = 0
                     const double factor = root ? (y[k] > 0.0f ? g[k] / (dof * y[k]) : 0.0) : 2.0 * g[k] / dof;
                     const double m = (*mean)[k];
                     const float* xk = x + plan->base[k];
                     float* dk = d + plan->base[k];
                     for (int64_t o : plan->offset) dk[o] += static_cast<float>(factor * (xk[o] - m));
                   }
                 });
  });
}

// ---- max and min ----

// NaN beats every number, so max and min propagate it, as torch's do.
struct Greater {
  bool operator()(float a, float b) const { return a > b || (a != a && b == b); }
};
struct Less {
  bool operator()(float a, float b) const { return a < b || (a != a && b == b); }
};

// d* of every (outer, inner) column: the first d no later value beats.
template <class Beats>
std::vector<int32_t> winners(const Tensor& x, const AxisView& v, Beats beats) {
  std::vector<int32_t> winner(v.outer * v.inner);
  const float* px = x.data();
  int32_t* pw = winner.data();
  parallel_for(v.outer * v.inner, kGrainElementwise / std::max<int64_t>(1, v.len) + 1, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) {
      int64_t o = k / v.inner, i = k % v.inner;
      const float* col = px + o * v.len * v.inner + i;
      int32_t best = 0;
      for (int64_t d = 1; d < v.len; ++d)
        if (beats(col[d * v.inner], col[best * v.inner])) best = static_cast<int32_t>(d);
      pw[k] = best;
    }
  });
  return winner;
}

AxisView extreme_view(const char* op, const Var& x, int axis) {
  check(x.defined(), "{}: undefined input", op);
  check(x.rank() >= 1, "{}: cannot reduce an axis of a scalar", op);
  int a = axis_of(op, x.shape(), axis);
  AxisView v = view_around(x.shape(), a);
  check(v.len > 0, "{}: axis {} of {} is empty", op, axis, x.shape());
  return v;
}

template <class Beats>
Var extreme_axis(const char* op, const Var& x, int axis, bool keepdim, Beats beats) {
  AxisView v = extreme_view(op, x, axis);
  auto winner = std::make_shared<std::vector<int32_t>>(winners(x.value(), v, beats));
  Tensor y = Tensor::empty(reduced_shape(x.shape(), x.shape().normalize_axis(axis), keepdim));
  const float* px = x.value().data();
  float* py = y.data();
  for (int64_t k = 0; k < v.outer * v.inner; ++k)
    py[k] = px[((k / v.inner) * v.len + (*winner)[k]) * v.inner + k % v.inner];
  return tape().record(op, std::move(y), {x}, [v, winner](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float* g = n.grad.data();
    float* d = dx->data();
    for (int64_t k = 0; k < v.outer * v.inner; ++k) {
      int64_t o = k / v.inner, i = k % v.inner;
      d[(o * v.len + (*winner)[k]) * v.inner + i] += g[k];
    }
  });
}

template <class Beats>
Indices extreme_index(const char* op, const Var& x, int axis, bool keepdim, Beats beats) {
  AxisView v = extreme_view(op, x, axis);
  return Indices(reduced_shape(x.shape(), x.shape().normalize_axis(axis), keepdim), winners(x.value(), v, beats));
}

template <class Beats>
Var extreme_all(const char* op, const Var& x, Beats beats) {
  check(x.defined(), "{}: undefined input", op);
  check(x.numel() > 0, "{}: {} has no elements", op, x.shape());
  const float* px = x.value().data();
  const int64_t n = x.numel();
  float best = px[0];
  for (int64_t i = 1; i < n; ++i)
    if (beats(px[i], best)) best = px[i];
  return tape().record(op, Tensor::scalar(best), {x}, [](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float* x = n.inputs[0]->value.data();
    const float m = n.value.data()[0];
    auto ties = [m](float v) { return v == m || (v != v && m != m); };
    int64_t count = 0;
    for (int64_t i = 0; i < dx->numel(); ++i) count += ties(x[i]);
    const float share = n.grad.data()[0] / static_cast<float>(count);
    float* d = dx->data();
    for (int64_t i = 0; i < dx->numel(); ++i)
      if (ties(x[i])) d[i] += share;
  });
}

}  // namespace

Var sum(const Var& x) { return reduce_all("sum", x, false); }
Var mean(const Var& x) { return reduce_all("mean", x, true); }
Var sum(const Var& x, int axis, bool keepdim) { return reduce_axis("sum", x, axis, keepdim, false); }
Var mean(const Var& x, int axis, bool keepdim) { return reduce_axis("mean", x, axis, keepdim, true); }
Var sum(const Var& x, const std::vector<int>& axes, bool keepdim) {
  return reduce_axes("sum", x, axes, keepdim, false);
}
Var mean(const Var& x, const std::vector<int>& axes, bool keepdim) {
  return reduce_axes("mean", x, axes, keepdim, true);
}
Var var(const Var& x, int axis, int correction, bool keepdim) {
  return spread_axes("var", x, {axis}, correction, keepdim, false);
}
Var var(const Var& x, const std::vector<int>& axes, int correction, bool keepdim) {
  return spread_axes("var", x, axes, correction, keepdim, false);
}
Var std(const Var& x, int axis, int correction, bool keepdim) {
  return spread_axes("std", x, {axis}, correction, keepdim, true);
}
Var std(const Var& x, const std::vector<int>& axes, int correction, bool keepdim) {
  return spread_axes("std", x, axes, correction, keepdim, true);
}

Var max(const Var& x, int axis, bool keepdim) { return extreme_axis("max", x, axis, keepdim, Greater{}); }
Var min(const Var& x, int axis, bool keepdim) { return extreme_axis("min", x, axis, keepdim, Less{}); }
Var max(const Var& x) { return extreme_all("max", x, Greater{}); }
Var min(const Var& x) { return extreme_all("min", x, Less{}); }
Indices argmax(const Var& x, int axis, bool keepdim) { return extreme_index("argmax", x, axis, keepdim, Greater{}); }
Indices argmin(const Var& x, int axis, bool keepdim) { return extreme_index("argmin", x, axis, keepdim, Less{}); }

}  // namespace rg
