// The GRU cell's pointwise part as one fused op (Cho et al. 2014; the gate
// convention of Nematus: h = u ⊙ h_prev + (1 − u) ⊙ c).
//
// Forward, per batch row b and unit j (m = mask[b], 1 if absent):
//   r = σ(xg[j] + hg[j]),  u = σ(xg[H+j] + hg[H+j]),  c = tanh(xc[j] + r·hc[j])
//   h = m·(u·h_prev + (1 − u)·c) + (1 − m)·h_prev
// Saved: r, u, c for every (b, j).
//
// Backward, from δ = dL/dh:
//   dh_prev += δ·(m·u + 1 − m)
//   du = m·δ·(h_prev − c)        dc = m·δ·(1 − u)
//   da_c = dc·(1 − c²)           (a_c = xc + r·hc, the candidate's argument)
//   dxc += da_c,  dhc += da_c·r,  dr = da_c·hc
//   da_r = dr·r(1 − r),  da_u = du·u(1 − u)
//   dxg += [da_r, da_u],  dhg += [da_r, da_u]
// Seven separate ops (two adds, two sigmoids, tanh, mul, the interpolation)
// would write and read seven [B, H] tensors each way; this writes one.
#include "rmsgrad/autograd/rnn_ops.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/fast_math.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

struct GruSaved {
  Tensor r, u, c;  // [B, H]
};

// dst[0, n) += src, or = src when the buffer is fresh (see Node::input_grad):
// every element is written exactly once per backward. Skipped without dst.
inline void put_row(float* dst, bool fresh, const float* src, int64_t n) {
  if (!dst) return;
  if (fresh) {
    std::copy_n(src, n, dst);
    return;
  }
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) dst[j] += src[j];
}

}  // namespace

Var gru_update(const Var& x_gates, const Var& h_gates, const Var& x_cand, const Var& h_cand, const Var& h_prev,
               const Tensor& mask) {
  check(h_prev.defined() && h_prev.rank() == 2, "gru_update: h_prev must be [B, H], got {}",
        shape_of(h_prev));
  const int64_t batch = h_prev.dim(0), hidden = h_prev.dim(1);
  const Shape gates{batch, 2 * hidden}, units{batch, hidden};
  check(x_gates.defined() && x_gates.shape() == gates && h_gates.defined() && h_gates.shape() == gates,
        "gru_update: gate terms {} and {} must be {} for h_prev {}", x_gates.shape(), h_gates.shape(), gates,
        h_prev.shape());
  check(x_cand.defined() && x_cand.shape() == units && h_cand.defined() && h_cand.shape() == units,
        "gru_update: candidate terms {} and {} must be {}", x_cand.shape(), h_cand.shape(), units);
  check(!mask.defined() || mask.shape() == Shape{batch}, "gru_update: mask {} must be [{}]",
        shape_of(mask), batch);

  auto saved = std::make_shared<GruSaved>(GruSaved{Tensor::empty(units), Tensor::empty(units), Tensor::empty(units)});
  Tensor h = Tensor::empty(units);
  const float *xg = x_gates.value().data(), *hg = h_gates.value().data();
  const float *xc = x_cand.value().data(), *hc = h_cand.value().data(), *hp = h_prev.value().data();
  const float* m = mask.defined() ? mask.data() : nullptr;
  float *r = saved->r.data(), *u = saved->u.data(), *c = saved->c.data(), *out = h.data();
  // The pointers are captured by value: read through the closure, every
  // load would first reload the pointer and the loop would not vectorise.
  parallel_for(batch, std::max<int64_t>(1, 2048 / hidden), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float mb = m ? m[b] : 1.0f;
      const float *xr = xg + b * 2 * hidden, *xu = xr + hidden, *hr = hg + b * 2 * hidden, *hu = hr + hidden;
      const int64_t k = b * hidden;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const float rj = fast_sigmoid(xr[j] + hr[j]);
        const float uj = fast_sigmoid(xu[j] + hu[j]);
        const float cj = fast_tanh(xc[k + j] + rj * hc[k + j]);
        r[k + j] = rj, u[k + j] = uj, c[k + j] = cj;
        out[k + j] = mb * (uj * hp[k + j] + (1.0f - uj) * cj) + (1.0f - mb) * hp[k + j];
      }
    }
  });

  Tensor mask_copy = mask;
  return tape().record(
      "gru_update", std::move(h), {x_gates, h_gates, x_cand, h_cand, h_prev},
      [saved, mask_copy, batch, hidden](Node& n) {
        bool assign[5];
        Tensor* grads[5];
        for (size_t i = 0; i < 5; ++i) grads[i] = n.input_grad(i, assign[i]);
        auto ptr = [&](int i) { return grads[i] ? grads[i]->data() : nullptr; };
        float *dxg = ptr(0), *dhg = ptr(1), *dxc = ptr(2), *dhc = ptr(3), *dhp = ptr(4);
        const float* hc = n.inputs[3]->value.data();
        const float* hp = n.inputs[4]->value.data();
        const float* d = n.grad.data();
        const float *r = saved->r.data(), *u = saved->u.data(), *c = saved->c.data();
        const float* m = mask_copy.defined() ? mask_copy.data() : nullptr;
        parallel_for(batch, std::max<int64_t>(1, 2048 / hidden), [&](int64_t lo, int64_t hi) {
          // One row's five gradient terms, computed in one vectorised pass
          // and then added to whichever inputs need them.
          std::vector<float> scratch(static_cast<size_t>(5 * hidden));
          float *da_r = scratch.data(), *da_u = da_r + hidden, *da_c = da_u + hidden;
          float *dhc_row = da_c + hidden, *dhp_row = dhc_row + hidden;
          for (int64_t b = lo; b < hi; ++b) {
            const float mb = m ? m[b] : 1.0f;
            const int64_t g = b * 2 * hidden, k = b * hidden;
#pragma omp simd
            for (int64_t j = 0; j < hidden; ++j) {
              const int64_t i = k + j;
              const float delta = d[i];
              const float du = mb * delta * (hp[i] - c[i]);
              const float dac = mb * delta * (1.0f - u[i]) * (1.0f - c[i] * c[i]);
              da_r[j] = dac * hc[i] * r[i] * (1.0f - r[i]);
              da_u[j] = du * u[i] * (1.0f - u[i]);
              da_c[j] = dac;
              dhc_row[j] = dac * r[i];
              dhp_row[j] = delta * (mb * u[i] + 1.0f - mb);
            }
            // In input order: if one Var is passed twice, its first slot
            // was the fresh one and must be written before the second adds.
            put_row(dxg ? dxg + g : nullptr, assign[0], da_r, hidden);
            put_row(dxg ? dxg + g + hidden : nullptr, assign[0], da_u, hidden);
            put_row(dhg ? dhg + g : nullptr, assign[1], da_r, hidden);
            put_row(dhg ? dhg + g + hidden : nullptr, assign[1], da_u, hidden);
            put_row(dxc ? dxc + k : nullptr, assign[2], da_c, hidden);
            put_row(dhc ? dhc + k : nullptr, assign[3], dhc_row, hidden);
            put_row(dhp ? dhp + k : nullptr, assign[4], dhp_row, hidden);
          }
        });
      });
}

}  // namespace rg
