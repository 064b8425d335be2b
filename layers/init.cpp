#include "rmsgrad/layers/init.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "rmsgrad/core/error.h"

// LAPACK (inside OpenBLAS), column-major: QR factorisation, then forming Q
// from the Householder reflectors sgeqrf_ leaves below R's diagonal.
extern "C" {
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
}

namespace rg {

Tensor init_constant(const Shape& shape, float value) { return Tensor::full(shape, value); }

Tensor init_uniform(const Shape& shape, float lo, float hi, Generator& gen) {
  check(lo <= hi, "init_uniform: lo {} > hi {}", lo, hi);
  return uniform(shape, lo, hi, gen);
}

Tensor init_normal(const Shape& shape, float stddev, Generator& gen) {
  check(stddev >= 0.0f, "init_normal: negative stddev {}", stddev);
  return normal(shape, 0.0f, stddev, gen);
}

Tensor shift_center(Tensor weight, float center) {
  if (center != 0.0f)
    for (float& w : weight.span()) w += center;
  return weight;
}

Fans weight_fans(const Shape& shape) {
  check(shape.rank() >= 2 && shape.numel() > 0, "weight_fans: needs a non-empty weight of rank ≥ 2, got {}", shape);
  const int64_t receptive = shape.numel() / (shape[0] * shape[1]);  // kh · kw for conv, 1 for dense
  return {shape[1] * receptive, shape[0] * receptive};
}

Tensor xavier_uniform(const Shape& shape, Generator& gen) {
  const Fans fans = weight_fans(shape);
  const float a = static_cast<float>(std::sqrt(6.0 / static_cast<double>(fans.in + fans.out)));
  return uniform(shape, -a, a, gen);
}

namespace {

// Calls a LAPACK routine twice: first asking for its optimal workspace size
// (lwork = −1), then for real.
template <class Routine>
int with_workspace(Routine routine) {
  int info = 0, lwork = -1;
  float best = 0.0f;
  routine(&best, &lwork, &info);
  if (info != 0) return info;
  lwork = std::max(1, static_cast<int>(best));
  std::vector<float> work(lwork);
  routine(work.data(), &lwork, &info);
  return info;
}

}  // namespace

Tensor orthogonal(const Shape& shape, Generator& gen) {
  check(shape.rank() >= 2 && shape.numel() > 0, "orthogonal: needs a non-empty weight of rank ≥ 2, got {}", shape);
  const int64_t rows = shape[0], cols = shape.numel() / rows;
  // Factor the tall orientation A [m, n], m ≥ n. A row-major [n, m] buffer is
  // the column-major [m, n] matrix LAPACK wants: column j is a[j·m .. j·m + m).
  // When rows < cols, A is the transpose of the result.
  const bool wide = rows < cols;
  const int m = static_cast<int>(wide ? cols : rows), n = static_cast<int>(wide ? rows : cols);
  Tensor a = normal(Shape{n, m}, 0.0f, 1.0f, gen);
  std::vector<float> tau(n);
  int info = with_workspace([&](float* work, const int* lwork, int* out_info) {
    sgeqrf_(&m, &n, a.data(), &m, tau.data(), work, lwork, out_info);
  });
  check(info == 0, "orthogonal: sgeqrf failed with info = {} for {}", info, shape);
  std::vector<float> sign(n);  // sign(R_jj); R sits on and above the diagonal now
  for (int j = 0; j < n; ++j) sign[j] = a.data()[static_cast<int64_t>(j) * m + j] < 0.0f ? -1.0f : 1.0f;
  info = with_workspace([&](float* work, const int* lwork, int* out_info) {
    sorgqr_(&m, &n, &n, a.data(), &m, tau.data(), work, lwork, out_info);
  });
  check(info == 0, "orthogonal: sorgqr failed with info = {} for {}", info, shape);

  Tensor q = Tensor::empty(shape);  // viewed as [rows, cols]
  float* out = q.data();
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      const float value = a.data()[j * m + i] * sign[j];  // Q[i, j]
      if (wide) out[j * cols + i] = value;  // result = Qᵀ
      else out[i * cols + j] = value;
    }
  return q;
}

namespace {

Tensor drawn_weight(const Shape& shape, const WeightInit& init, Generator& gen) {
  switch (init.kind) {
    case WeightInitKind::XavierUniform: return xavier_uniform(shape, gen);
    case WeightInitKind::Normal: return init_normal(shape, init.stddev, gen);
    case WeightInitKind::Orthogonal: return orthogonal(shape, gen);
    case WeightInitKind::FanInUniform: {
      const float bound = 1.0f / std::sqrt(static_cast<float>(weight_fans(shape).in));
      return uniform(shape, -bound, bound, gen);
    }
  }
  throw Error("make_weight: unknown WeightInitKind");
}

}  // namespace

Tensor make_weight(const Shape& shape, const WeightInit& init, Generator& gen) {
  return shift_center(drawn_weight(shape, init, gen), init.center);
}

}  // namespace rg
