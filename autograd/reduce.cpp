// Reductions over one axis or over everything.
//
// x is viewed as [outer, D, inner] around the reduced axis (D its length):
//
//   sum   y[o, i] = Σ_d x[o, d, i]        dx[o, d, i] += g[o, i]
//   mean  y[o, i] = Σ_d x[o, d, i] / D    dx[o, d, i] += g[o, i] / D
//   max   y[o, i] = x[o, d*, i]           dx[o, d*, i] += g[o, i]
//
// max saves the winning d* of every output (the first, on ties). keepdim
// keeps the reduced axis with length 1. Sums over everything accumulate in
// double, so a long sum does not lose the small terms.
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
  int a = x.shape().normalize_axis(axis);
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

}  // namespace

Var sum(const Var& x) { return reduce_all("sum", x, false); }
Var mean(const Var& x) { return reduce_all("mean", x, true); }
Var sum(const Var& x, int axis, bool keepdim) { return reduce_axis("sum", x, axis, keepdim, false); }
Var mean(const Var& x, int axis, bool keepdim) { return reduce_axis("mean", x, axis, keepdim, true); }

Var max(const Var& x, int axis, bool keepdim) {
  check(x.defined(), "max: undefined input");
  check(x.rank() >= 1, "max: cannot reduce an axis of a scalar");
  int a = x.shape().normalize_axis(axis);
  AxisView v = view_around(x.shape(), a);
  check(v.len > 0, "max: axis {} of {} is empty", axis, x.shape());
  Tensor y = Tensor::empty(reduced_shape(x.shape(), a, keepdim));
  auto winner = std::make_shared<std::vector<int32_t>>(y.numel());
  const float* px = x.value().data();
  float* py = y.data();
  int32_t* pw = winner->data();
  parallel_for(v.outer * v.inner, kGrainElementwise / std::max<int64_t>(1, v.len) + 1, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) {
      int64_t o = k / v.inner, i = k % v.inner;
      const float* col = px + o * v.len * v.inner + i;
      int32_t best = 0;
      for (int64_t d = 1; d < v.len; ++d)
        if (col[d * v.inner] > col[best * v.inner]) best = static_cast<int32_t>(d);
      py[k] = col[best * v.inner];
      pw[k] = best;
    }
  });
  return tape().record("max", std::move(y), {x}, [v, winner](Node& n) {
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

}  // namespace rg
