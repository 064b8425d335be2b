#pragma once
// What the fused row kernels share (norm_ops.cpp, row_norms.h, and the
// recurrent cells and attention ops that run a norm inside their own pass):
// a backward's outputs as compile-time choices, a row written into a fresh or
// an accumulating gradient, and parameter gradients summed over rows.
//
// A parameter's gradient (a gain's, a bias's) is a sum over rows. The rows are
// cut into chunks (as many as threads, at most one per grain of rows:
// core/parallel.h's chunk_count); each chunk sums its own rows into its own
// zeroed partial, and the partials are added into the gradient in chunk order.
// No two threads write one float, and one thread count always gives the same
// sums.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/tensor.h"

namespace rg::fused_rows {

// Calls body(has_dx, has_dg, has_db), each a std::bool_constant saying whether
// a backward writes that output, so that its element loop carries no test per
// element: a loop with `if (dg)` inside does not vectorize. Always inlined,
// so that the loop's scalars stay in registers of the caller's row loop.
template <class Body>
[[gnu::always_inline]] inline void with_outputs(bool dx, bool dg, bool db, Body&& body) {
  const auto on_db = [&](auto has_dx, auto has_dg) {
    db ? body(has_dx, has_dg, std::true_type{}) : body(has_dx, has_dg, std::false_type{});
  };
  const auto on_dg = [&](auto has_dx) { dg ? on_db(has_dx, std::true_type{}) : on_db(has_dx, std::false_type{}); };
  dx ? on_dg(std::true_type{}) : on_dg(std::false_type{});
}

// dst[0, n) = src into a fresh gradient (see Node::input_grad), else
// dst += src; nothing without dst.
inline void put_row(float* dst, bool fresh, const float* src, int64_t n) {
  if (!dst) return;
  if (fresh) {
    std::copy_n(src, n, dst);
    return;
  }
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) dst[j] += src[j];
}

// One parameter's gradient (or none: a null grad) as per-chunk partial sums
// of `len`, for `chunks` chunks (see the top).
class PartialSums {
 public:
  PartialSums(Tensor* grad, int64_t len, int64_t chunks)
      : grad_(grad), len_(len), chunks_(chunks), partials_(grad ? static_cast<size_t>(chunks * len) : 0, 0.0f) {}
  // The chunk's own partial, or null when the parameter needs no gradient.
  float* at(int64_t chunk) { return grad_ ? partials_.data() + chunk * len_ : nullptr; }
  // Adds the partials into the gradient, in chunk order.
  void add_into_gradient() {
    if (!grad_) return;
    float* d = grad_->data();
    for (int64_t c = 0; c < chunks_; ++c) {
      const float* p = partials_.data() + c * len_;
#pragma omp simd
      for (int64_t i = 0; i < len_; ++i) d[i] += p[i];
    }
  }

 private:
  Tensor* grad_;
  int64_t len_, chunks_;
  std::vector<float> partials_;
};

// The walk every backward with parameters makes: body(lo, hi, dg, db) for
// the rows of each parallel chunk, dg and db that chunk's own zeroed partial
// sums of `len` (null where dgain or dbias is not wanted), added into dgain
// and dbias at the end in chunk order.
template <class Body>
void rows_with_partials(int64_t rows, int64_t grain, int64_t len, Tensor* dgain, Tensor* dbias, Body&& body) {
  const int64_t chunks = chunk_count(rows, grain);
  PartialSums dg(dgain, len, chunks), db(dbias, len, chunks);
  parallel_for_chunks(rows, grain,
                      [&](int64_t chunk, int64_t lo, int64_t hi) { body(lo, hi, dg.at(chunk), db.at(chunk)); });
  dg.add_into_gradient();
  db.add_into_gradient();
}

}  // namespace rg::fused_rows
