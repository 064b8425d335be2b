// Softmax, log-softmax and cross-entropy, numerically stable.
//
// Along an axis of length D (x viewed as [outer, D, inner]):
//   m = max_d x_d,  lse = m + log Σ_d exp(x_d − m)     (no overflow: every exponent ≤ 0)
//   softmax      y_d = exp(x_d − lse)      dx_d += y_d (g_d − Σ_e g_e y_e)
//   log_softmax  y_d = x_d − lse           dx_d += g_d − exp(y_d) Σ_e g_e
//
// Cross-entropy from logits x [N, C] with target t and label smoothing ε (the
// target distribution is (1 − ε)·onehot(t) + ε/C):
//   ℓ = −Σ_c q_c log p_c = lse − (1 − ε)·x_t − (ε/C)·Σ_c x_c
//   dℓ/dx_c = p_c − (1 − ε)·[c = t] − ε/C
// Each row has a weight w (its row weight, 0 when t is ignore_index); the loss
// is Σ w ℓ / Σ w (or Σ w ℓ). Fused: only lse per row is saved; backward
// recomputes p from the logits, so no [N, C] tensor outlives the forward.
// Logits [N, C, d1, ...] (a class score per pixel or per time step) are first
// permuted to [N, d1, ..., C] and flattened to rows, on the tape, so the same
// fused kernel serves them; the [N, C] form goes to the kernel directly.
#include <algorithm>
#include <cmath>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/fast_math.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/reduce_row.h"

namespace rg {

namespace {

struct AxisView {
  int64_t outer, len, inner;
};

AxisView view_around(const Var& x, int axis, const char* op) {
  check(x.defined(), "{}: undefined input", op);
  check(x.rank() >= 1, "{}: needs at least one axis, got a scalar", op);
  int a = x.shape().normalize_axis(axis);
  return {x.shape().outer(a), x.shape()[a], x.shape().inner(a)};
}

// y = x − lse along the axis (log-softmax), for every (outer, inner) column.
void log_softmax_kernel(const float* x, float* y, const AxisView& v) {
  parallel_for(v.outer * v.inner, std::max<int64_t>(1, kGrainHeavy / std::max<int64_t>(v.len, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t k = lo; k < hi; ++k) {
                   int64_t o = k / v.inner, i = k % v.inner;
                   const float* col = x + o * v.len * v.inner + i;
                   float* out = y + o * v.len * v.inner + i;
                   float m = -INFINITY;
                   for (int64_t d = 0; d < v.len; ++d) m = std::max(m, col[d * v.inner]);
                   float s = 0.0f;
                   for (int64_t d = 0; d < v.len; ++d) s += fast_exp(col[d * v.inner] - m);
                   float lse = m + std::log(s);
                   for (int64_t d = 0; d < v.len; ++d) out[d * v.inner] = col[d * v.inner] - lse;
                 }
               });
}

}  // namespace

Var log_softmax(const Var& x, int axis) {
  AxisView v = view_around(x, axis, "log_softmax");
  Tensor y = Tensor::empty(x.shape());
  log_softmax_kernel(x.value().data(), y.data(), v);
  return tape().record("log_softmax", std::move(y), {x}, [v](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float* y = n.value.data();
    const float* g = n.grad.data();
    float* d = dx->data();
    parallel_for(v.outer * v.inner, std::max<int64_t>(1, kGrainHeavy / std::max<int64_t>(v.len, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t k = lo; k < hi; ++k) {
                     int64_t base = (k / v.inner) * v.len * v.inner + k % v.inner;
                     float gsum = 0.0f;
                     for (int64_t e = 0; e < v.len; ++e) gsum += g[base + e * v.inner];
                     for (int64_t e = 0; e < v.len; ++e) {
                       int64_t j = base + e * v.inner;
                       d[j] += g[j] - fast_exp(y[j]) * gsum;
                     }
                   }
                 });
  });
}

Var softmax(const Var& x, int axis) {
  AxisView v = view_around(x, axis, "softmax");
  Tensor y = Tensor::empty(x.shape());
  log_softmax_kernel(x.value().data(), y.data(), v);
  float* py = y.data();
  parallel_for(y.numel(), kGrainHeavy, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) py[i] = fast_exp(py[i]);
  });
  return tape().record("softmax", std::move(y), {x}, [v](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float* y = n.value.data();
    const float* g = n.grad.data();
    float* d = dx->data();
    parallel_for(v.outer * v.inner, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(v.len, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t k = lo; k < hi; ++k) {
                     int64_t base = (k / v.inner) * v.len * v.inner + k % v.inner;
                     float dot = 0.0f;
                     for (int64_t e = 0; e < v.len; ++e) dot += g[base + e * v.inner] * y[base + e * v.inner];
                     for (int64_t e = 0; e < v.len; ++e) {
                       int64_t j = base + e * v.inner;
                       d[j] += y[j] * (g[j] - dot);
                     }
                   }
                 });
  });
}

namespace {

// logits [N, C], targets [N]: the fused kernel of the header.
Var cross_entropy_rows(const Var& logits, const Indices& targets, const CrossEntropyOptions& options) {
  const int64_t rows = logits.dim(0), classes = logits.dim(1);
  check(classes > 0, "cross_entropy: logits {} have no classes", logits.shape());
  check(targets.shape.rank() == 1 && targets.shape[0] == rows,
        "cross_entropy: targets {} must be [N] for logits {}", targets.shape, logits.shape());
  const float eps = options.label_smoothing;
  check(eps >= 0.0f && eps <= 1.0f, "cross_entropy: label_smoothing {} is not in [0, 1]", eps);
  const bool weighted = options.row_weights.defined();
  check(!weighted || options.row_weights.shape() == Shape{rows},
        "cross_entropy: row_weights {} must be [N] for logits {}", weighted ? options.row_weights.shape() : Shape{},
        logits.shape());

  // Per-row weight: the row weight, zero for ignored targets.
  auto weights = std::make_shared<std::vector<float>>(rows);
  double total_weight = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    int32_t t = targets.values[r];
    bool ignored = t == options.ignore_index;
    check(ignored || (t >= 0 && t < classes), "cross_entropy: target {} at row {} is out of range [0, {})", t, r,
          classes);
    (*weights)[r] = ignored ? 0.0f : (weighted ? options.row_weights.data()[r] : 1.0f);
    total_weight += (*weights)[r];
  }
  // All rows ignored: the mean is defined as 0 (PyTorch gives NaN).
  const float norm = options.mean ? (total_weight > 0 ? static_cast<float>(1.0 / total_weight) : 0.0f) : 1.0f;

  auto lse = std::make_shared<std::vector<float>>(rows);
  std::vector<double> row_loss(rows, 0.0);
  const float* x = logits.value().data();
  parallel_for(rows, std::max<int64_t>(1, kGrainHeavy / classes), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* row = x + r * classes;
      // Row reductions in 16 explicit lanes each (core/reduce_row.h).
      const float m = lane_max(classes, [row](int64_t c) { return row[c]; });
      const float s = lane_sum(classes, [row, m](int64_t c) { return fast_exp(row[c] - m); });
      const float xsum = eps > 0.0f ? sum_of(row, classes) : 0.0f;
      float l = m + std::log(s);
      (*lse)[r] = l;
      if ((*weights)[r] == 0.0f) continue;
      int32_t t = targets.values[r];
      float loss = l - (1.0f - eps) * row[t] - (eps / classes) * xsum;
      row_loss[r] = static_cast<double>((*weights)[r]) * loss;
    }
  });
  double total = 0.0;
  for (double l : row_loss) total += l;
  Tensor out = Tensor::scalar(static_cast<float>(total * norm));

  return tape().record("cross_entropy", std::move(out), {logits},
                       [values = targets.values, weights, lse, norm, eps, classes](Node& n) {
                         bool assign = false;
                         Tensor* dx = n.input_grad(0, assign);
                         if (!dx) return;
                         const float g = n.grad.data()[0] * norm;
                         const float* x = n.inputs[0]->value.data();
                         float* d = dx->data();
                         const int64_t rows = static_cast<int64_t>(values.size());
                         parallel_for(rows, std::max<int64_t>(1, kGrainHeavy / classes), [&](int64_t lo, int64_t hi) {
                           for (int64_t r = lo; r < hi; ++r) {
                             const float w = g * (*weights)[r];
                             float* drow = d + r * classes;
                             if (w == 0.0f) {
                               if (assign) std::fill(drow, drow + classes, 0.0f);
                               continue;
                             }
                             const float* row = x + r * classes;
                             const float l = (*lse)[r], smooth = eps / classes;
                             if (assign) {
#pragma omp simd
                               for (int64_t c = 0; c < classes; ++c) drow[c] = w * (fast_exp(row[c] - l) - smooth);
                             } else {
#pragma omp simd
                               for (int64_t c = 0; c < classes; ++c) drow[c] += w * (fast_exp(row[c] - l) - smooth);
                             }
                             drow[values[r]] -= w * (1.0f - eps);
                           }
                         });
                       });
}

}  // namespace

Var cross_entropy(const Var& logits, const Indices& targets, const CrossEntropyOptions& options) {
  check(logits.defined(), "cross_entropy: undefined logits");
  check(logits.rank() >= 2, "cross_entropy: logits must be [N, C] or [N, C, d1, ...], got {}", logits.shape());
  if (logits.rank() == 2) return cross_entropy_rows(logits, targets, options);
  // [N, C, d1, ...] → [N, d1, ..., C] → [N·d1·..., C]; targets [N, d1, ...] flatten in the same order.
  const Shape position = logits.shape().without(1);  // [N, d1, ...]
  check(targets.shape == position, "cross_entropy: targets {} must be [N, d1, ...] = {} for logits {}",
        targets.shape, position, logits.shape());
  check(!options.row_weights.defined() || options.row_weights.shape() == position,
        "cross_entropy: row_weights {} must be [N, d1, ...] = {} for logits {}",
        shape_of(options.row_weights), position, logits.shape());
  std::vector<int> order{0};
  for (int a = 2; a < logits.rank(); ++a) order.push_back(a);
  order.push_back(1);
  const int64_t classes = logits.dim(1), rows = position.numel();
  Var flat = reshape(permute(logits, order), {rows, classes});
  CrossEntropyOptions flat_options = options;
  if (options.row_weights.defined()) flat_options.row_weights = options.row_weights.reshape(Shape{rows});
  return cross_entropy_rows(flat, Indices(Shape{rows}, targets.values), flat_options);
}

}  // namespace rg
