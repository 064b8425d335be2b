// The fused weight-normalization op; the math is in weight_norm.h.
//
// Rows are output units: v viewed as [out, n] with n = numel / out.
//   forward:   s_i = 1/‖v_i‖,  W_ij = g_i s_i v_ij
//   backward:  c_i = Σ_j G_ij v_ij s_i                     (= G_i · v̂_i = dL/dg_i)
//              dv_ij += g_i s_i (G_ij − c_i s_i v_ij)
// Each row's forward and backward are independent, so both run in parallel
// over rows, and dg needs no cross-thread reduction.
#include "rmsgrad/autograd/weight_norm.h"

#include <cmath>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/reduce_row.h"

namespace rg {

namespace {

int64_t row_grain(int64_t n) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)); }

// v [rows, n], g [rows] → w [rows, n]; inv_norm[i] = 1/‖v_i‖.
void weight_norm_forward(const float* v, const float* g, float* w, float* inv_norm, int64_t rows, int64_t n) {
  parallel_for(rows, row_grain(n), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float* vi = v + i * n;
      inv_norm[i] = 1.0f / std::sqrt(sum_of_squares(vi, n));  // +inf for a zero row, caught below
      const float scale = g[i] * inv_norm[i];
      float* wi = w + i * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) wi[j] = scale * vi[j];
    }
  });
}

// dw = G [rows, n]; adds into dv [rows, n] and dg [rows] (either may be null).
void weight_norm_backward(const float* v, const float* g, const float* dw, const float* inv_norm, float* dv,
                          float* dg, int64_t rows, int64_t n) {
  parallel_for(rows, row_grain(n), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float* vi = v + i * n;
      const float* gi = dw + i * n;
      const float s = inv_norm[i];
      const float c = dot(gi, vi, n) * s;  // G_i · v̂_i
      if (dg) dg[i] += c;
      if (!dv) continue;
      float* di = dv + i * n;
      const float scale = g[i] * s, along = c * s;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) di[j] += scale * (gi[j] - along * vi[j]);
    }
  });
}

}  // namespace

Var weight_norm(const Var& v, const Var& g) {
  check(v.defined() && g.defined(), "weight_norm: undefined v or g");
  check(v.rank() >= 2, "weight_norm: v must be [out, ...] with at least two axes, got {}", v.shape());
  const int64_t rows = v.dim(0), n = v.numel() / std::max<int64_t>(rows, 1);
  check(g.shape() == Shape{rows}, "weight_norm: g {} must be [{}] for v {}", g.shape(), rows, v.shape());
  check(n > 0, "weight_norm: v {} has empty rows", v.shape());

  Tensor w = Tensor::empty(v.shape());
  auto inv_norm = std::make_shared<std::vector<float>>(rows);
  weight_norm_forward(v.value().data(), g.value().data(), w.data(), inv_norm->data(), rows, n);
  // Checked after the parallel loop: an exception must not leave an OpenMP region.
  for (int64_t i = 0; i < rows; ++i)
    check(std::isfinite((*inv_norm)[i]), "weight_norm: row {} of v {} has zero norm", i, v.shape());
  return tape().record("weight_norm", std::move(w), {v, g}, [inv_norm, rows, n](Node& node) {
    Tensor* dv = node.input_grad(0);
    Tensor* dg = node.input_grad(1);
    weight_norm_backward(node.inputs[0]->value.data(), node.inputs[1]->value.data(), node.grad.data(),
                         inv_norm->data(), dv ? dv->data() : nullptr, dg ? dg->data() : nullptr, rows, n);
  });
}

Tensor weight_norm_gains(const Tensor& v) {
  check(v.defined() && v.rank() >= 1 && v.dim(0) > 0, "weight_norm_gains: v {} must be [out, ...]", shape_of(v));
  const int64_t rows = v.dim(0), n = v.numel() / rows;
  Tensor g = Tensor::empty(Shape{rows});
  for (int64_t i = 0; i < rows; ++i) {
    const float* vi = v.data() + i * n;
    double sq = 0.0;
    for (int64_t j = 0; j < n; ++j) sq += static_cast<double>(vi[j]) * vi[j];
    g.data()[i] = static_cast<float>(std::sqrt(sq));
  }
  return g;
}

}  // namespace rg
