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
//
// Normalized recurrent terms: with norms N_g and N_c the op reads the raw
// terms a_g = h U_gᵀ and a_c = h U_cᵀ and uses hg = N_g(a_g), hc = N_c(a_c)
// above. Each row's norm runs in the row's own pass (row_norms.h), so the
// normalized terms never reach memory: forward saves two statistics per norm
// and row, and backward recomputes from them the row of hc it needs instead
// of saving a [B, H] tensor. The gradients
// dL/dhg = [da_r, da_u] and dL/dhc = da_c·r then go through the norms'
// row backward to dL/da_g, dL/da_c and the norms' gains and biases, whose
// sums over rows are kept per chunk of rows and added in chunk order.
#include "rmsgrad/autograd/rnn_ops.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "rmsgrad/autograd/row_norms.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/fast_math.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

using namespace fused_rows;
using namespace row_norms;

struct GruSaved {
  Tensor r, u, c;            // [B, H]
  std::vector<float> stats;  // per row: the gate norm's two statistics, then the candidate norm's
};

// Rows per parallel chunk: about 2048 units of work each.
int64_t row_grain(int64_t hidden) { return std::max<int64_t>(1, 2048 / std::max<int64_t>(hidden, 1)); }

}  // namespace

Var gru_update(const Var& x_gates, const Var& h_gates, const Var& x_cand, const Var& h_cand, const Var& h_prev,
               const Tensor& mask, const RowNorm& norm_gates, const RowNorm& norm_cand) {
  check(h_prev.defined() && h_prev.rank() == 2, "gru_update: h_prev must be [B, H], got {}",
        shape_of(h_prev));
  const int64_t batch = h_prev.dim(0), hidden = h_prev.dim(1);
  check(hidden > 0, "gru_update: the state {} has no units", h_prev.shape());
  const Shape gates{batch, 2 * hidden}, units{batch, hidden};
  check(x_gates.defined() && x_gates.shape() == gates && h_gates.defined() && h_gates.shape() == gates,
        "gru_update: gate terms {} and {} must be {} for h_prev {}", shape_of(x_gates), shape_of(h_gates), gates,
        h_prev.shape());
  check(x_cand.defined() && x_cand.shape() == units && h_cand.defined() && h_cand.shape() == units,
        "gru_update: candidate terms {} and {} must be {}", shape_of(x_cand), shape_of(h_cand), units);
  check(!mask.defined() || mask.shape() == Shape{batch}, "gru_update: mask {} must be [{}]",
        shape_of(mask), batch);
  check_row_norm("gru_update", "gate norm", norm_gates, 2 * hidden);
  check_row_norm("gru_update", "candidate norm", norm_cand, hidden);

  const RowKernel ng(norm_gates, 2 * hidden), nc(norm_cand, hidden);
  const bool normalized = ng.normalizes() || nc.normalizes();
  auto saved = std::make_shared<GruSaved>(GruSaved{Tensor::empty(units), Tensor::empty(units), Tensor::empty(units),
                                                   std::vector<float>(normalized ? 4 * batch : 0)});
  Tensor h = Tensor::empty(units);
  const float *xg = x_gates.value().data(), *hg = h_gates.value().data();
  const float *xc = x_cand.value().data(), *hc = h_cand.value().data(), *hp = h_prev.value().data();
  const float* m = mask.defined() ? mask.data() : nullptr;
  float *r = saved->r.data(), *u = saved->u.data(), *c = saved->c.data(), *out = h.data();
  float* stats = saved->stats.data();
  // The pointers are captured by value: read through the closure, every
  // load would first reload the pointer and the loop would not vectorise.
  parallel_for(batch, row_grain(hidden), [=](int64_t lo, int64_t hi) {
    std::vector<float> normed(normalized ? 3 * hidden : 0);  // one row of N_g(a_g) and N_c(a_c)
    for (int64_t b = lo; b < hi; ++b) {
      const float mb = m ? m[b] : 1.0f;
      const int64_t k = b * hidden;
      const float *hr = hg + b * 2 * hidden, *hcr = hc + k;
      if (ng.normalizes()) ng.forward(hr, normed.data(), stats + 4 * b), hr = normed.data();
      if (nc.normalizes()) {
        float* cand_row = normed.data() + 2 * hidden;
        nc.forward(hcr, cand_row, stats + 4 * b + 2), hcr = cand_row;
      }
      const float *xr = xg + b * 2 * hidden, *xu = xr + hidden, *hu = hr + hidden, *xcr = xc + k;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const float rj = fast_sigmoid(xr[j] + hr[j]);
        const float uj = fast_sigmoid(xu[j] + hu[j]);
        const float cj = fast_tanh(xcr[j] + rj * hcr[j]);
        r[k + j] = rj, u[k + j] = uj, c[k + j] = cj;
        out[k + j] = mb * (uj * hp[k + j] + (1.0f - uj) * cj) + (1.0f - mb) * hp[k + j];
      }
    }
  });

  std::vector<Var> inputs{x_gates, h_gates, x_cand, h_cand, h_prev};
  const auto [gates_gain, gates_bias] = add_norm_inputs(norm_gates, inputs);
  const auto [cand_gain, cand_bias] = add_norm_inputs(norm_cand, inputs);
  Tensor mask_copy = mask;
  return tape().record(
      "gru_update", std::move(h), inputs,
      [saved, mask_copy, batch, hidden, gates_norm = ng, cand_norm = nc, gates_gain, gates_bias, cand_gain,
       cand_bias](Node& n) {
        bool assign[5];
        Tensor* grads[5];
        for (size_t i = 0; i < 5; ++i) grads[i] = n.input_grad(i, assign[i]);
        auto ptr = [&](int i) { return grads[i] ? grads[i]->data() : nullptr; };
        float *dxg = ptr(0), *dhg = ptr(1), *dxc = ptr(2), *dhc = ptr(3), *dhp = ptr(4);
        const float* hg = n.inputs[1]->value.data();
        const float* hc = n.inputs[3]->value.data();
        const float* hp = n.inputs[4]->value.data();
        const float* d = n.grad.data();
        const float *r = saved->r.data(), *u = saved->u.data(), *c = saved->c.data();
        const float* stats = saved->stats.data();
        const float* m = mask_copy.defined() ? mask_copy.data() : nullptr;
        // The norms' parameter gradients, summed per chunk of rows.
        const int64_t grain = row_grain(hidden), chunks = chunk_count(batch, grain);
        PartialSums dgg(parameter_grad(n, gates_gain), 2 * hidden, chunks);
        PartialSums dbg(parameter_grad(n, gates_bias), 2 * hidden, chunks);
        PartialSums dgc(parameter_grad(n, cand_gain), hidden, chunks), dbc(parameter_grad(n, cand_bias), hidden, chunks);
        const RowKernel ng = gates_norm.with_parameters(n, gates_gain, gates_bias);
        const RowKernel nc = cand_norm.with_parameters(n, cand_gain, cand_bias);
        parallel_for_chunks(batch, grain, [&](int64_t chunk, int64_t lo, int64_t hi) {
          // One row's five gradient terms, computed in one vectorised pass
          // and then added to whichever inputs need them.
          std::vector<float> scratch(static_cast<size_t>(6 * hidden));
          float *da_r = scratch.data(), *da_u = da_r + hidden, *da_c = da_u + hidden;
          float *dhc_row = da_c + hidden, *dhp_row = dhc_row + hidden, *hc_normed = dhp_row + hidden;
          for (int64_t b = lo; b < hi; ++b) {
            const float mb = m ? m[b] : 1.0f;
            const int64_t g = b * 2 * hidden, k = b * hidden;
            const float* hcr = hc + k;  // the candidate's recurrent term as the update saw it
            if (nc.normalizes()) nc.recompute(hcr, stats + 4 * b + 2, hc_normed), hcr = hc_normed;
#pragma omp simd
            for (int64_t j = 0; j < hidden; ++j) {
              const int64_t i = k + j;
              const float delta = d[i];
              const float du = mb * delta * (hp[i] - c[i]);
              const float dac = mb * delta * (1.0f - u[i]) * (1.0f - c[i] * c[i]);
              da_r[j] = dac * hcr[j] * r[i] * (1.0f - r[i]);
              da_u[j] = du * u[i] * (1.0f - u[i]);
              da_c[j] = dac;
              dhc_row[j] = dac * r[i];
              dhp_row[j] = delta * (mb * u[i] + 1.0f - mb);
            }
            // In input order: if one Var is passed twice, its first slot
            // was the fresh one and must be written before the second adds.
            put_row(dxg ? dxg + g : nullptr, assign[0], da_r, 2 * hidden);  // da_r, da_u are one row
            if (ng.normalizes())
              ng.backward(assign[1], hg + g, da_r, stats + 4 * b, dhg ? dhg + g : nullptr,
                            dgg.at(chunk), dbg.at(chunk));
            else
              put_row(dhg ? dhg + g : nullptr, assign[1], da_r, 2 * hidden);
            put_row(dxc ? dxc + k : nullptr, assign[2], da_c, hidden);
            if (nc.normalizes())
              nc.backward(assign[3], hc + k, dhc_row, stats + 4 * b + 2, dhc ? dhc + k : nullptr,
                            dgc.at(chunk), dbc.at(chunk));
            else
              put_row(dhc ? dhc + k : nullptr, assign[3], dhc_row, hidden);
            put_row(dhp ? dhp + k : nullptr, assign[4], dhp_row, hidden);
          }
        });
        for (PartialSums* sums : {&dgg, &dbg, &dgc, &dbc}) sums->add_into_gradient();
      });
}

}  // namespace rg
