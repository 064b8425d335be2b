#include "rmsgrad/core/gemm.h"

#include <cblas.h>

#include <cstdlib>

#ifdef RG_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/observer.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

GemmLibrary library_from_environment() {
  const char* name = std::getenv("RG_GEMM");
  if (name == nullptr || *name == '\0') return onednn_available() ? GemmLibrary::OneDNN : GemmLibrary::OpenBLAS;
  const GemmLibrary library = parse_gemm_library(name);
  check(library != GemmLibrary::OneDNN || onednn_available(),
        "RG_GEMM=onednn, but this build has no oneDNN (install libdnnl-dev and configure again)");
  return library;
}

GemmLibrary& chosen_library() {
  static GemmLibrary library = library_from_environment();
  return library;
}

void gemm_unobserved(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS leaves C untouched when K = 0; the math says C = beta·C.
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  const int64_t lda = trans_a ? m : k;
  const int64_t ldb = trans_b ? k : n;
#ifdef RG_HAVE_ONEDNN
  // oneDNN's threads are OpenMP's: every thread outside a parallel region,
  // one inside (gemm_batched's loop).
  if (m * n * k >= kOneDnnMinWork && chosen_library() == GemmLibrary::OneDNN) {
    const dnnl_status_t status =
        dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, n);
    check(status == dnnl_success, "gemm: oneDNN's sgemm failed (status {}) on [{}, {}] × [{}, {}]",
          static_cast<int>(status), m, k, k, n);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(n));
}

void gemm_batched_unobserved(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float* a, const float* b, float beta, float* c) {
  const int64_t sa = m * k, sb = k * n, sc = m * n;
  const int64_t flops_per_item = 2 * m * n * k;
  // Small products, or many of them, run one per thread: no thread waits for
  // another inside a product. A few products of more than ~1 Mflop each, too
  // few to balance the threads, run one by one, each keeping every thread busy.
  const int threads = num_threads();
  if (batch == 1 || threads == 1 || (flops_per_item > (1 << 20) && batch < 4 * threads)) {
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

bool onednn_available() {
#ifdef RG_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

GemmLibrary gemm_library() { return chosen_library(); }

void set_gemm_library(GemmLibrary library) {
  check(library != GemmLibrary::OneDNN || onednn_available(),
        "set_gemm_library: this build has no oneDNN (install libdnnl-dev and configure again)");
  chosen_library() = library;
}

GemmLibrary parse_gemm_library(std::string_view name) {
  if (name == "openblas") return GemmLibrary::OpenBLAS;
  if (name == "onednn") return GemmLibrary::OneDNN;
  throw Error(fmt::format("RG_GEMM: unknown library '{}' (expected openblas or onednn)", name));
}

std::string_view gemm_library_name(GemmLibrary library) {
  return library == GemmLibrary::OneDNN ? "onednn" : "openblas";
}

}  // namespace rg
