#pragma once
// Matrix products through OpenBLAS's cblas_sgemm. Transposed operands are
// passed as flags, never copied: op(A) is A or Aᵀ as stored row-major.
//
//   C[M, N] = alpha · op(A)[M, K] · op(B)[K, N] + beta · C[M, N]
//
// An installed observer (core/observer.h) hears of every gemm and
// gemm_batched call, on the thread that makes it.
#include <cstdint>

namespace rg {

// Leading dimensions are those of the matrices as stored (row-major), i.e.
// lda = K when A is [M, K] untransposed, lda = M when A is stored as [K, M].
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c);

// `batch` independent products with contiguous matrices one after another.
// Many small products run in parallel over the batch (BLAS single-threaded);
// few large ones run one by one with a multi-threaded BLAS.
void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, const float* b, float beta, float* c);

}  // namespace rg
