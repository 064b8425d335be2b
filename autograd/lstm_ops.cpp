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
// lstm_hidden (c̃ = c_normed, the cell after norm_c)
//   forward   o = σ(a_o), t = tanh(c̃),  h = m·o·t + (1 − m)·h_prev
//   saved     o, t                                     [B, H] each
//   backward  from δ = dL/dh:
//             dh_prev += (1 − m)·δ
//             da_o += m·δ·t·o(1 − o),  dc̃ += m·δ·o·(1 − t²),  da_i,f,g += 0
//
// Composed from primitives the cell would be four slices, three sigmoids, two
// tanh, four products, a sum and two mask blends, each writing and reading a
// [B, H] tensor both ways; these write one tensor each.
#include "autograd/lstm_ops.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "autograd/tape.h"
#include "core/error.h"
#include "core/parallel.h"

namespace rg {

namespace {

inline float sigmoid(float v) { return v >= 0 ? 1.0f / (1.0f + std::exp(-v)) : std::exp(v) / (1.0f + std::exp(v)); }

// dst[i] += value, or dst[i] = value when the buffer is fresh (see
// Node::input_grad): every element is written exactly once per backward.
inline void put(float* dst, bool fresh, int64_t i, float value) {
  if (dst) dst[i] = (fresh ? 0.0f : dst[i]) + value;
}

// Rows per parallel chunk: about 2048 units of work each.
int64_t row_grain(int64_t hidden) { return std::max<int64_t>(1, 2048 / std::max<int64_t>(hidden, 1)); }

// Checks gates [B, 4H] against a [B, H] tensor and the mask; returns H.
int64_t check_cell_shapes(const char* op, const Var& gates, const Var& state, const char* state_name,
                          const Tensor& mask) {
  check(state.defined() && state.rank() == 2, "{}: {} must be [B, H], got {}", op, state_name,
        state.defined() ? state.shape().str() : "undefined");
  const int64_t batch = state.dim(0), hidden = state.dim(1);
  check(gates.defined() && gates.shape() == Shape{batch, 4 * hidden},
        "{}: gates {} must be [B, 4H] = [{}, {}] for {} {}", op,
        gates.defined() ? gates.shape().str() : "undefined", batch, 4 * hidden, state_name, state.shape());
  check(!mask.defined() || mask.shape() == Shape{batch}, "{}: mask {} must be [{}]", op,
        mask.defined() ? mask.shape().str() : "", batch);
  return hidden;
}

}  // namespace

Var lstm_cell_state(const Var& gates, const Var& c_prev, const Tensor& mask) {
  const int64_t hidden = check_cell_shapes("lstm_cell_state", gates, c_prev, "c_prev", mask);
  const int64_t batch = c_prev.dim(0);
  Tensor ifg = Tensor::empty(Shape{batch, 3 * hidden});  // saved activations i | f | g
  Tensor c = Tensor::empty(Shape{batch, hidden});
  const float *a = gates.value().data(), *cp = c_prev.value().data();
  const float* m = mask.defined() ? mask.data() : nullptr;
  float *act = ifg.data(), *out = c.data();
  parallel_for(batch, row_grain(hidden), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float mb = m ? m[b] : 1.0f;
      const float* ab = a + b * 4 * hidden;
      float* sb = act + b * 3 * hidden;
      for (int64_t j = 0; j < hidden; ++j) {
        const float i = sigmoid(ab[j]), f = sigmoid(ab[hidden + j]), g = std::tanh(ab[2 * hidden + j]);
        sb[j] = i, sb[hidden + j] = f, sb[2 * hidden + j] = g;
        const int64_t k = b * hidden + j;
        out[k] = mb * (f * cp[k] + i * g) + (1.0f - mb) * cp[k];
      }
    }
  });

  Tensor mask_copy = mask;
  return tape().record("lstm_cell_state", std::move(c), {gates, c_prev}, [ifg, mask_copy, batch, hidden](Node& n) {
    bool fresh_gates = false, fresh_cp = false;
    Tensor* dgates_t = n.input_grad(0, fresh_gates);
    Tensor* dcp_t = n.input_grad(1, fresh_cp);
    float* dgates = dgates_t ? dgates_t->data() : nullptr;
    float* dcp = dcp_t ? dcp_t->data() : nullptr;
    const float* cp = n.inputs[1]->value.data();
    const float* d = n.grad.data();
    const float* act = ifg.data();
    const float* m = mask_copy.defined() ? mask_copy.data() : nullptr;
    parallel_for(batch, row_grain(hidden), [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        const float mb = m ? m[b] : 1.0f;
        const float* sb = act + b * 3 * hidden;
        const int64_t row = b * 4 * hidden;
        for (int64_t j = 0; j < hidden; ++j) {
          const int64_t k = b * hidden + j;
          const float i = sb[j], f = sb[hidden + j], g = sb[2 * hidden + j];
          const float delta = d[k], live = mb * delta;
          put(dcp, fresh_cp, k, delta * (mb * f + 1.0f - mb));
          put(dgates, fresh_gates, row + j, live * g * i * (1.0f - i));
          put(dgates, fresh_gates, row + hidden + j, live * cp[k] * f * (1.0f - f));
          put(dgates, fresh_gates, row + 2 * hidden + j, live * i * (1.0f - g * g));
          put(dgates, fresh_gates, row + 3 * hidden + j, 0.0f);
        }
      }
    });
  });
}

Var lstm_hidden(const Var& gates, const Var& c_normed, const Var& h_prev, const Tensor& mask) {
  const int64_t hidden = check_cell_shapes("lstm_hidden", gates, c_normed, "c_normed", mask);
  check(h_prev.defined() && h_prev.shape() == c_normed.shape(), "lstm_hidden: h_prev {} must match c_normed {}",
        h_prev.defined() ? h_prev.shape().str() : "undefined", c_normed.shape());
  const int64_t batch = c_normed.dim(0);
  auto saved_o = Tensor::empty(Shape{batch, hidden}), saved_t = Tensor::empty(Shape{batch, hidden});
  Tensor h = Tensor::empty(Shape{batch, hidden});
  const float *a = gates.value().data(), *cn = c_normed.value().data(), *hp = h_prev.value().data();
  const float* m = mask.defined() ? mask.data() : nullptr;
  float *so = saved_o.data(), *st = saved_t.data(), *out = h.data();
  parallel_for(batch, row_grain(hidden), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float mb = m ? m[b] : 1.0f;
      const float* ao = a + b * 4 * hidden + 3 * hidden;
      for (int64_t j = 0; j < hidden; ++j) {
        const int64_t k = b * hidden + j;
        const float o = sigmoid(ao[j]), t = std::tanh(cn[k]);
        so[k] = o, st[k] = t;
        out[k] = mb * o * t + (1.0f - mb) * hp[k];
      }
    }
  });

  Tensor mask_copy = mask;
  return tape().record(
      "lstm_hidden", std::move(h), {gates, c_normed, h_prev},
      [saved_o, saved_t, mask_copy, batch, hidden](Node& n) {
        bool fresh[3];
        Tensor* grads[3];
        for (size_t i = 0; i < 3; ++i) grads[i] = n.input_grad(i, fresh[i]);
        auto ptr = [&](int i) { return grads[i] ? grads[i]->data() : nullptr; };
        float *dgates = ptr(0), *dcn = ptr(1), *dhp = ptr(2);
        const float* d = n.grad.data();
        const float *so = saved_o.data(), *st = saved_t.data();
        const float* m = mask_copy.defined() ? mask_copy.data() : nullptr;
        parallel_for(batch, row_grain(hidden), [&](int64_t lo, int64_t hi) {
          for (int64_t b = lo; b < hi; ++b) {
            const float mb = m ? m[b] : 1.0f;
            const int64_t row = b * 4 * hidden;
            for (int64_t j = 0; j < hidden; ++j) {
              const int64_t k = b * hidden + j;
              const float o = so[k], t = st[k], delta = d[k], live = mb * delta;
              put(dhp, fresh[2], k, (1.0f - mb) * delta);
              put(dcn, fresh[1], k, live * o * (1.0f - t * t));
              put(dgates, fresh[0], row + j, 0.0f);
              put(dgates, fresh[0], row + hidden + j, 0.0f);
              put(dgates, fresh[0], row + 2 * hidden + j, 0.0f);
              put(dgates, fresh[0], row + 3 * hidden + j, live * t * o * (1.0f - o));
            }
          }
        });
      });
}

}  // namespace rg
