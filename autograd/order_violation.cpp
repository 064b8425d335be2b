// The fused order-violation penalty; the math is in order_violation.h.
//
// Every pass walks the pairs with the D coordinates innermost and contiguous,
// so the inner loops vectorise. The two backward passes are split so that each
// thread writes only its own rows: ds by rows of s (a sum over images j),
// dim by rows of im (a sum over captions i), with no reduction across threads.
#include "rmsgrad/autograd/order_violation.h"

#include <algorithm>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

int64_t row_grain(int64_t pairs_per_row, int64_t d) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(pairs_per_row * d, 1));
}

// E[i, j] = Σ_d max(0, s_id − im_jd)².
void order_violation_forward(const float* s, const float* im, float* e, int64_t bs, int64_t bi, int64_t d) {
  parallel_for(bs, row_grain(bi, d), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float* si = s + i * d;
      for (int64_t j = 0; j < bi; ++j) {
        const float* imj = im + j * d;
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t k = 0; k < d; ++k) {
          const float t = std::max(si[k] - imj[k], 0.0f);
          acc += t * t;
        }
        e[i * bi + j] = acc;
      }
    }
  });
}

// ds_i += 2 Σ_j G_ij max(0, s_i − im_j).
void order_violation_backward_s(const float* s, const float* im, const float* g, float* ds, int64_t bs, int64_t bi,
                                int64_t d) {
  parallel_for(bs, row_grain(bi, d), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float* si = s + i * d;
      float* dsi = ds + i * d;
      for (int64_t j = 0; j < bi; ++j) {
        const float c = 2.0f * g[i * bi + j];
        if (c == 0.0f) continue;  // e.g. a hinge that is inactive for this pair
        const float* imj = im + j * d;
#pragma omp simd
        for (int64_t k = 0; k < d; ++k) dsi[k] += c * std::max(si[k] - imj[k], 0.0f);
      }
    }
  });
}

// dim_j −= 2 Σ_i G_ij max(0, s_i − im_j).
void order_violation_backward_im(const float* s, const float* im, const float* g, float* dim, int64_t bs, int64_t bi,
                                 int64_t d) {
  parallel_for(bi, row_grain(bs, d), [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      const float* imj = im + j * d;
      float* dimj = dim + j * d;
      for (int64_t i = 0; i < bs; ++i) {
        const float c = 2.0f * g[i * bi + j];
        if (c == 0.0f) continue;
        const float* si = s + i * d;
#pragma omp simd
        for (int64_t k = 0; k < d; ++k) dimj[k] -= c * std::max(si[k] - imj[k], 0.0f);
      }
    }
  });
}

}  // namespace

Var order_violation(const Var& s, const Var& im) {
  check(s.defined() && im.defined(), "order_violation: undefined s or im");
  check(s.rank() == 2 && im.rank() == 2 && s.dim(1) == im.dim(1),
        "order_violation: s and im must be [Bs, D] and [Bi, D] with the same D, got {} and {}", s.shape(), im.shape());
  const int64_t bs = s.dim(0), bi = im.dim(0), d = s.dim(1);
  Tensor e = Tensor::empty(Shape{bs, bi});
  order_violation_forward(s.value().data(), im.value().data(), e.data(), bs, bi, d);
  return tape().record("order_violation", std::move(e), {s, im}, [bs, bi, d](Node& node) {
    const float* sv = node.inputs[0]->value.data();
    const float* imv = node.inputs[1]->value.data();
    if (Tensor* ds = node.input_grad(0)) order_violation_backward_s(sv, imv, node.grad.data(), ds->data(), bs, bi, d);
    if (Tensor* dim = node.input_grad(1))
      order_violation_backward_im(sv, imv, node.grad.data(), dim->data(), bs, bi, d);
  });
}

}  // namespace rg
