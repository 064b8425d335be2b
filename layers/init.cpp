#include "layers/init.h"

#include <cmath>
#include <vector>

#include "core/error.h"

// LAPACK (inside OpenBLAS), column-major: QR factorisation and forming Q.
extern "C" {
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
}

namespace rg {

Tensor init_constant(const Shape& shape, float value) { return Tensor::full(shape, value); }

Tensor init_uniform(const Shape& shape, float lo, float hi, Generator& gen) { return uniform(shape, lo, hi, gen); }

Tensor init_normal(const Shape& shape, float stddev, Generator& gen) { return normal(shape, 0.0f, stddev, gen); }

Tensor xavier_uniform(const Shape& shape, Generator& gen) {
  check(shape.rank() >= 2, "xavier_uniform: needs a weight of rank ≥ 2, got {}", shape);
  const int64_t receptive = shape.numel() / (shape[0] * shape[1]);
  const double fan_in = static_cast<double>(shape[1] * receptive), fan_out = static_cast<double>(shape[0] * receptive);
  const float a = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
  return uniform(shape, -a, a, gen);
}

Tensor orthogonal(const Shape& shape, Generator& gen) {
  check(shape.rank() == 2 && shape.numel() > 0, "orthogonal: needs a non-empty 2-D shape, got {}", shape);
  const int64_t rows = shape[0], cols = shape[1];
  // Factor the tall orientation: A [m, n] with m ≥ n, column-major.
  const bool transpose = rows < cols;
  const int m = static_cast<int>(transpose ? cols : rows), n = static_cast<int>(transpose ? rows : cols);
  Tensor a = normal(Shape{n, m}, 0.0f, 1.0f, gen);  // row-major [n, m] = column-major [m, n]
  std::vector<float> tau(n);
  int info = 0, lwork = -1;
  float work_size = 0;
  sgeqrf_(&m, &n, a.data(), &m, tau.data(), &work_size, &lwork, &info);
  lwork = std::max(1, static_cast<int>(work_size));
  std::vector<float> work(lwork);
  sgeqrf_(&m, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  check(info == 0, "orthogonal: sgeqrf failed with info = {}", info);
  std::vector<float> sign(n);  // sign(diag(R)) makes Q unique (uniform over orthogonal matrices)
  for (int j = 0; j < n; ++j) sign[j] = a.data()[j * m + j] < 0 ? -1.0f : 1.0f;
  lwork = -1;
  sorgqr_(&m, &n, &n, a.data(), &m, tau.data(), &work_size, &lwork, &info);
  lwork = std::max(1, static_cast<int>(work_size));
  work.resize(lwork);
  sorgqr_(&m, &n, &n, a.data(), &m, tau.data(), work.data(), &lwork, &info);
  check(info == 0, "orthogonal: sorgqr failed with info = {}", info);
  // Column j of Q is a[j * m .. j * m + m).
  Tensor q = Tensor::empty(shape);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      const float v = a.data()[j * m + i] * sign[j];
      if (transpose) q.data()[j * cols + i] = v;  // rows of the result are Q's columns
      else q.data()[i * cols + j] = v;
    }
  return q;
}

}  // namespace rg
