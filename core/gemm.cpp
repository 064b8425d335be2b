#include "rmsgrad/core/gemm.h"

#include <cblas.h>

#include "rmsgrad/core/observer.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

void gemm_unobserved(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS leaves C untouched when K = 0; the math says C = beta·C.
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  const int64_t lda = trans_a ? m : k;
  const int64_t ldb = trans_b ? k : n;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(n));
}

void gemm_batched_unobserved(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float* a, const float* b, float beta, float* c) {
  const int64_t sa = m * k, sb = k * n, sc = m * n;
  const int64_t flops_per_item = 2 * m * n * k;
  // A product of more than ~1 Mflop keeps all threads of BLAS busy by itself.
  if (batch == 1 || flops_per_item > (1 << 20) || num_threads() == 1) {
    for (int64_t i = 0; i < batch; ++i)
      gemm_unobserved(trans_a, trans_b, m, n, k, alpha, a + i * sa, b + i * sb, beta, c + i * sc);
    return;
  }
  BlasSerialScope serial;
  parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      gemm_unobserved(trans_a, trans_b, m, n, k, alpha, a + i * sa, b + i * sb, beta, c + i * sc);
  });
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c) {
  Observer* observer = installed_observer();
  const GemmCall call{trans_a, trans_b, 1, m, n, k, beta != 0.0f};
  if (observer) observer->gemm_started(call);
  gemm_unobserved(trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
  if (observer) observer->gemm_finished(call);
}

void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, const float* b, float beta, float* c) {
  Observer* observer = installed_observer();
  const GemmCall call{trans_a, trans_b, batch, m, n, k, beta != 0.0f};
  if (observer) observer->gemm_started(call);
  gemm_batched_unobserved(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
  if (observer) observer->gemm_finished(call);
}

}  // namespace rg
