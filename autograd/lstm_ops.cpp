// The LSTM cell's pointwise parts as two fused ops (gate order i, f, g, o as
// in PyTorch; Hochreiter & Schmidhuber 1997, normalized as in Zhang & Sennrich
// 2019 §2: h = o ⊙ tanh(norm_c(c)), the unnormalized c carried).
//
// Per batch row b and unit j, with m = mask[b] (1 if absent) and the gate
// pre-activations a = gates[b] = [a_i | a_f | a_g | a_o]:
//
// lstm_cell_state
//   forward   i = σ(a_i), f = σ(a_f), g = tanh(a_g)
//             c = m·(f·c_prev + i·g) + (1 − m)·c_prev
//   saved     i, f, g                                  [B, 3H]
//   backward  from δ = dL/dc:
//             dc_prev += δ·(m·f + 1 − m)
//             da_i += m·δ·g·i(1 − i),  da_f += m·δ·c_prev·f(1 − f),
//             da_g += m·δ·i·(1 − g²),  da_o += 0
//
// lstm_hidden (c̃ = norm_c(c), the cell after its norm)
//   forward   o = σ(a_o), t = tanh(c̃),  h = m·o·t + (1 − m)·h_prev
//   saved     o, t                                     [B, H] each
//   backward  from δ = dL/dh:
//             dh_prev += (1 − m)·δ
//             da_o += m·δ·t·o(1 − o),  dc̃ = m·δ·o·(1 − t²),  da_i,f,g += 0
//             dc += norm_c's row backward of dc̃ (dc̃ itself without a norm)
//
// lstm_gates
//   forward   gates = x_term + norm_h(h_term)
//   backward  dx_term += δ,  dh_term += norm_h's row backward of δ
//
// The norms' rows run in the ops' own passes (row_norms.h); each saves its two
// statistics per row, and the normalized rows never reach memory.
//
// Composed from primitives the cell would be four slices, three sigmoids, two
// tanh, four products, a sum and two mask blends, each writing and reading a
// [B, H] tensor both ways; these write one tensor each.
//
// σ and tanh are core/fast_math.h's (within 3e-7 of libm), so every row is one
// branch-free SIMD loop. Backward writes each input's gradient row by row in
// input order, with one loop for a fresh buffer (assign) and one for an
// existing one (add); the zero gradients (o from lstm_cell_state, i, f, g from
// lstm_hidden) are written only into a fresh buffer, where adding 0 is a no-op.
#include "rmsgrad/autograd/lstm_ops.h"

#include <algorithm>
#include <memory>

#include "rmsgrad/autograd/row_norms.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/fast_math.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

using namespace fused_rows;
using namespace row_norms;

// dst = value into a fresh buffer (see Node::input_grad), else dst += value;
// resolved at compile time so the row loops below have no branch.
template <bool Fresh>
inline void put(float& dst, float value) {
  if constexpr (Fresh)
    dst = value;
  else
    dst += value;
}

// Rows per parallel chunk: about 2048 units of work each.
int64_t row_grain(int64_t hidden) { return std::max<int64_t>(1, 2048 / std::max<int64_t>(hidden, 1)); }

// Checks gates [B, 4H] against a [B, H] tensor and the mask; returns H.
int64_t check_cell_shapes(const char* op, const Var& gates, const Var& state, const char* state_name,
                          const Tensor& mask) {
  check(state.defined() && state.rank() == 2, "{}: {} must be [B, H], got {}", op, state_name,
        shape_of(state));
  const int64_t batch = state.dim(0), hidden = state.dim(1);
  check(gates.defined() && gates.shape() == Shape{batch, 4 * hidden},
        "{}: gates {} must be [B, 4H] = [{}, {}] for {} {}", op,
        shape_of(gates), batch, 4 * hidden, state_name, state.shape());
  check(!mask.defined() || mask.shape() == Shape{batch}, "{}: mask {} must be [{}]", op,
        shape_of(mask), batch);
  return hidden;
}

// One row of each gradient. Pointers are to row b of each tensor: act = the
// saved i | f | g [3H], dg = dgates [4H], the others [H].

// lstm_cell_state → dc_prev.
template <bool Fresh>
void cell_state_dcp_row(float* dcp, const float* f, const float* d, float mb, int64_t hidden) {
#pragma omp simd
  for (int64_t j = 0; j < hidden; ++j) put<Fresh>(dcp[j], d[j] * (mb * f[j] + 1.0f - mb));
}

// lstm_cell_state → da_i, da_f, da_g (and da_o = 0).
template <bool Fresh>
void cell_state_dgates_row(float* dg, const float* act, const float* cp, const float* d, float mb, int64_t hidden) {
  const float *i = act, *f = act + hidden, *g = act + 2 * hidden;
  float *da_i = dg, *da_f = dg + hidden, *da_g = dg + 2 * hidden;
#pragma omp simd
  for (int64_t j = 0; j < hidden; ++j) {
    const float live = mb * d[j];
    put<Fresh>(da_i[j], live * g[j] * i[j] * (1.0f - i[j]));
    put<Fresh>(da_f[j], live * cp[j] * f[j] * (1.0f - f[j]));
    put<Fresh>(da_g[j], live * i[j] * (1.0f - g[j] * g[j]));
  }
  if constexpr (Fresh) std::fill_n(dg + 3 * hidden, hidden, 0.0f);
}

// lstm_hidden → da_o (and da_i, da_f, da_g = 0).
template <bool Fresh>
void hidden_dgates_row(float* dg, const float* o, const float* t, const float* d, float mb, int64_t hidden) {
  if constexpr (Fresh) std::fill_n(dg, 3 * hidden, 0.0f);
  float* da_o = dg + 3 * hidden;
#pragma omp simd
  for (int64_t j = 0; j < hidden; ++j) put<Fresh>(da_o[j], mb * d[j] * t[j] * o[j] * (1.0f - o[j]));
}

// lstm_hidden → dc̃.
template <bool Fresh>
void hidden_dcn_row(float* dcn, const float* o, const float* t, const float* d, float mb, int64_t hidden) {
#pragma omp simd
  for (int64_t j = 0; j < hidden; ++j) put<Fresh>(dcn[j], mb * d[j] * o[j] * (1.0f - t[j] * t[j]));
}

// lstm_hidden → dh_prev.
template <bool Fresh>
void hidden_dhp_row(float* dhp, const float* d, float mb, int64_t hidden) {
#pragma omp simd
  for (int64_t j = 0; j < hidden; ++j) put<Fresh>(dhp[j], (1.0f - mb) * d[j]);
}

}  // namespace

Var lstm_cell_state(const Var& gates, const Var& c_prev, const Tensor& mask) {
  const int64_t hidden = check_cell_shapes("lstm_cell_state", gates, c_prev, "c_prev", mask);
  const int64_t batch = c_prev.dim(0);
  Tensor ifg = Tensor::empty(Shape{batch, 3 * hidden});  // saved activations i | f | g
  Tensor c = Tensor::empty(Shape{batch, hidden});
  const float* const a = gates.value().data();
  const float* const cp = c_prev.value().data();
  const float* const m = mask.defined() ? mask.data() : nullptr;
  float* const act = ifg.data();
  float* const out = c.data();
  // Pointers captured by value: read through a by-reference closure, every
  // load would first reload the pointer and the loop would not vectorise.
  parallel_for(batch, row_grain(hidden), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float mb = m ? m[b] : 1.0f;
      const float *a_i = a + b * 4 * hidden, *a_f = a_i + hidden, *a_g = a_f + hidden;
      float *s_i = act + b * 3 * hidden, *s_f = s_i + hidden, *s_g = s_f + hidden;
      const float* cpb = cp + b * hidden;
      float* ob = out + b * hidden;
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const float i = fast_sigmoid(a_i[j]), f = fast_sigmoid(a_f[j]), g = fast_tanh(a_g[j]);
        s_i[j] = i, s_f[j] = f, s_g[j] = g;
        ob[j] = mb * (f * cpb[j] + i * g) + (1.0f - mb) * cpb[j];
      }
    }
  });

  Tensor mask_copy = mask;
  return tape().record("lstm_cell_state", std::move(c), {gates, c_prev}, [ifg, mask_copy, batch, hidden](Node& n) {
    bool fresh_gates = false, fresh_cp = false;
    Tensor* dgates_t = n.input_grad(0, fresh_gates);
    Tensor* dcp_t = n.input_grad(1, fresh_cp);
    float* const dgates = dgates_t ? dgates_t->data() : nullptr;
    float* const dcp = dcp_t ? dcp_t->data() : nullptr;
    const float* const cp = n.inputs[1]->value.data();
    const float* const d = n.grad.data();
    const float* const act = ifg.data();
    const float* const m = mask_copy.defined() ? mask_copy.data() : nullptr;
    parallel_for(batch, row_grain(hidden), [=](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const float mb = m ? m[b] : 1.0f;
        const float *ab = act + b * 3 * hidden, *db = d + b * hidden;
        if (dgates) {
          float* dg = dgates + b * 4 * hidden;
          if (fresh_gates)
            cell_state_dgates_row<true>(dg, ab, cp + b * hidden, db, mb, hidden);
          else
            cell_state_dgates_row<false>(dg, ab, cp + b * hidden, db, mb, hidden);
        }
        if (dcp) {
          if (fresh_cp)
            cell_state_dcp_row<true>(dcp + b * hidden, ab + hidden, db, mb, hidden);
          else
            cell_state_dcp_row<false>(dcp + b * hidden, ab + hidden, db, mb, hidden);
        }
      }
    });
  });
}

Var lstm_gates(const Var& x_term, const Var& h_term, const RowNorm& norm_h) {
  check(x_term.defined() && x_term.rank() == 2 && x_term.dim(1) % 4 == 0,
        "lstm_gates: input term {} must be [B, 4H]", shape_of(x_term));
  check(h_term.defined() && h_term.shape() == x_term.shape(), "lstm_gates: recurrent term {} must match {}",
        shape_of(h_term), x_term.shape());
  const int64_t batch = x_term.dim(0), width = x_term.dim(1);
  check_row_norm("lstm_gates", "norm", norm_h, width);
  const RowKernel norm(norm_h, width);
  auto stats = std::make_shared<std::vector<float>>(norm.normalizes() ? 2 * batch : 0);
  Tensor gates = Tensor::empty(x_term.shape());
  const float* const x = x_term.value().data();
  const float* const z = h_term.value().data();
  float* const out = gates.data();
  float* const st = stats->data();
  parallel_for(batch, row_grain(width), [=](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float *xb = x + b * width, *zb = z + b * width;
      float* ob = out + b * width;
      if (norm.normalizes()) {
        norm.forward(zb, ob, st + 2 * b);
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) ob[j] = xb[j] + ob[j];
      } else {
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) ob[j] = xb[j] + zb[j];
      }
    }
  });

  std::vector<Var> inputs{x_term, h_term};
  const auto [gain_at, bias_at] = add_norm_inputs(norm_h, inputs);
  return tape().record("lstm_gates", std::move(gates), inputs,
                       [stats, forward_norm = norm, batch, width, gain_at, bias_at](Node& n) {
    bool fresh_x = false, fresh_z = false;
    Tensor* dx_t = n.input_grad(0, fresh_x);
    Tensor* dz_t = n.input_grad(1, fresh_z);
    float* const dx = dx_t ? dx_t->data() : nullptr;
    float* const dz = dz_t ? dz_t->data() : nullptr;
    const float* const z = n.inputs[1]->value.data();
    const float* const d = n.grad.data();
    const int64_t grain = row_grain(width), chunks = chunk_count(batch, grain);
    PartialSums dgain(parameter_grad(n, gain_at), width, chunks), dbias(parameter_grad(n, bias_at), width, chunks);
    const RowKernel norm = forward_norm.with_parameters(n, gain_at, bias_at);
    parallel_for_chunks(batch, grain, [&](int64_t chunk, int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const float* db = d + b * width;
        // In input order: if both terms are one Var, its first slot was the fresh one.
        put_row(dx ? dx + b * width : nullptr, fresh_x, db, width);
        if (norm.normalizes())
          norm.backward(fresh_z, z + b * width, db, stats->data() + 2 * b, dz ? dz + b * width : nullptr,
                        dgain.at(chunk), dbias.at(chunk));
        else
          put_row(dz ? dz + b * width : nullptr, fresh_z, db, width);
      }
    });
    dgain.add_into_gradient();
    dbias.add_into_gradient();
  });
}

Var lstm_hidden(const Var& gates, const Var& c, const Var& h_prev, const Tensor& mask, const RowNorm& norm_c) {
  const int64_t hidden = check_cell_shapes("lstm_hidden", gates, c, "c", mask);
  check(h_prev.defined() && h_prev.shape() == c.shape(), "lstm_hidden: h_prev {} must match c {}",
        shape_of(h_prev), c.shape());
  check_row_norm("lstm_hidden", "norm", norm_c, hidden);
  const int64_t batch = c.dim(0);
  const RowKernel norm(norm_c, hidden);
  auto saved_o = Tensor::empty(Shape{batch, hidden}), saved_t = Tensor::empty(Shape{batch, hidden});
  auto stats = std::make_shared<std::vector<float>>(norm.normalizes() ? 2 * batch : 0);
  Tensor h = Tensor::empty(Shape{batch, hidden});
  const float* const a = gates.value().data();
  const float* const cv = c.value().data();
  const float* const hp = h_prev.value().data();
  const float* const m = mask.defined() ? mask.data() : nullptr;
  float* const so = saved_o.data();
  float* const st = saved_t.data();
  float* const out = h.data();
  float* const ns = stats->data();
  parallel_for(batch, row_grain(hidden), [=](int64_t lo, int64_t hi) {
    std::vector<float> normed(norm.normalizes() ? hidden : 0);  // one row of norm_c(c)
    for (int64_t b = lo; b < hi; ++b) {
      const float mb = m ? m[b] : 1.0f;
      const float* ao = a + b * 4 * hidden + 3 * hidden;
      const int64_t k = b * hidden;
      const float* cn = cv + k;
      if (norm.normalizes()) norm.forward(cn, normed.data(), ns + 2 * b), cn = normed.data();
#pragma omp simd
      for (int64_t j = 0; j < hidden; ++j) {
        const float o = fast_sigmoid(ao[j]), t = fast_tanh(cn[j]);
        so[k + j] = o, st[k + j] = t;
        out[k + j] = mb * o * t + (1.0f - mb) * hp[k + j];
      }
    }
  });

  std::vector<Var> inputs{gates, c, h_prev};
  const auto [gain_at, bias_at] = add_norm_inputs(norm_c, inputs);
  Tensor mask_copy = mask;
  return tape().record(
      "lstm_hidden", std::move(h), inputs,
      [saved_o, saved_t, stats, forward_norm = norm, mask_copy, batch, hidden, gain_at, bias_at](Node& n) {
        bool fresh[3];
        Tensor* grads[3];
        for (size_t i = 0; i < 3; ++i) grads[i] = n.input_grad(i, fresh[i]);
        auto ptr = [&](int i) { return grads[i] ? grads[i]->data() : nullptr; };
        float *const dgates = ptr(0), *const dc = ptr(1), *const dhp = ptr(2);
        const bool fresh_gates = fresh[0], fresh_c = fresh[1], fresh_hp = fresh[2];
        const float* const cv = n.inputs[1]->value.data();
        const float* const d = n.grad.data();
        const float* const so = saved_o.data();
        const float* const st = saved_t.data();
        const float* const m = mask_copy.defined() ? mask_copy.data() : nullptr;
        const int64_t grain = row_grain(hidden), chunks = chunk_count(batch, grain);
        PartialSums dgain(parameter_grad(n, gain_at), hidden, chunks), dbias(parameter_grad(n, bias_at), hidden, chunks);
        const RowKernel norm = forward_norm.with_parameters(n, gain_at, bias_at);
        parallel_for_chunks(batch, grain, [&](int64_t chunk, int64_t lo, int64_t hi) {
          std::vector<float> dcn(norm.normalizes() ? hidden : 0);  // one row of dL/dnorm_c(c)
          for (int64_t b = lo; b < hi; ++b) {
            const float mb = m ? m[b] : 1.0f;
            const int64_t k = b * hidden;
            const float *o = so + k, *t = st + k, *db = d + k;
            // In input order: if c and h_prev are one Var, its first slot
            // was the fresh one and must be written before the second adds.
            if (dgates) {
              if (fresh_gates)
                hidden_dgates_row<true>(dgates + b * 4 * hidden, o, t, db, mb, hidden);
              else
                hidden_dgates_row<false>(dgates + b * 4 * hidden, o, t, db, mb, hidden);
            }
            if (norm.normalizes()) {
              hidden_dcn_row<true>(dcn.data(), o, t, db, mb, hidden);
              norm.backward(fresh_c, cv + k, dcn.data(), stats->data() + 2 * b, dc ? dc + k : nullptr,
                            dgain.at(chunk), dbias.at(chunk));
            } else if (dc) {
              if (fresh_c)
                hidden_dcn_row<true>(dc + k, o, t, db, mb, hidden);
              else
                hidden_dcn_row<false>(dc + k, o, t, db, mb, hidden);
            }
            if (dhp) {
              if (fresh_hp)
                hidden_dhp_row<true>(dhp + k, db, mb, hidden);
              else
                hidden_dhp_row<false>(dhp + k, db, mb, hidden);
            }
          }
        });
        dgain.add_into_gradient();
        dbias.add_into_gradient();
      });
}

}  // namespace rg
