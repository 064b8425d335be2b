#pragma once
// Matrix products through OpenBLAS's cblas_sgemm. Transposed operands are
// passed as flags, never copied: op(A) is A or Aᵀ as stored row-major.
//
//   C[M, N] = alpha · op(A)[M, K] · op(B)[K, N] + beta · C[M, N]
#include <cstdint>
#include <vector>

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

// ---- recording the products (bench/bench_floor) ----
// While a GemmRecording exists, every gemm and gemm_batched call is noted
// (one entry per call, whichever thread makes it): what a training step asks
// of BLAS, to be replayed alone as the step's floor. Off, the cost is one
// relaxed atomic load per call.
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool accumulate = false;  // beta ≠ 0
  double flops() const { return 2.0 * static_cast<double>(batch) * m * n * k; }
};

class GemmRecording {
 public:
  GemmRecording();   // starts recording; one recording at a time
  ~GemmRecording();  // stops
  GemmRecording(const GemmRecording&) = delete;
  GemmRecording& operator=(const GemmRecording&) = delete;
  std::vector<GemmCall> calls() const;
};

}  // namespace rg
