#pragma once
// One row of RMSNorm (and its pRMSNorm and L2-Norm forms) or LayerNorm, forward
// and backward: the kernels of the fused norm ops (norm_ops.cpp, whose header
// comment derives them) and of the recurrent cells that run a norm inside
// their own pass over the state (rnn_ops.cpp, lstm_ops.cpp). A row is n
// contiguous units with a gain (and bias) per unit.
//
// Each norm's forward is two steps, so that a caller can keep the statistics
// and write the normalized row wherever it needs it:
//   stats = *_row_stats(a)          one (RMS) or two (LayerNorm) reductions
//   *_row_forward(a, stats, y)      y = a / D · g (+ b), or (a − μ) r · g + b
// Backward adds the row's terms to the gain and bias sums dg and db (either
// may be null: a chunk of rows' partial sums, fused_rows.h) and writes dx
// (Assign) or adds into it (either way, dx may be null).
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "rmsgrad/autograd/fused_rows.h"
#include "rmsgrad/autograd/norm_ops.h"
#include "rmsgrad/autograd/var.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/reduce_row.h"

namespace rg::row_norms {

// ---------------------------------------------------------------- RMSNorm

struct RmsStats {
  float inv_d, coef;  // 1/D and the backward's c
};

// m = k (RMS) or 1 (L2-Norm): what the sum of squares is divided by.
inline float rms_divisor(const RmsNormConfig& cfg, int64_t k) { return cfg.l2 ? 1.0f : static_cast<float>(k); }

// D and c from the first k units of a.
inline RmsStats rms_row_stats(const float* a, int64_t k, float m, const RmsNormConfig& cfg) {
  const float q = sum_of_squares(a, k);
  const float mean_sq = q / m;
  if (cfg.eps_inside) {
    const float inv_d = 1.0f / std::sqrt(mean_sq + cfg.eps);
    return {inv_d, inv_d * inv_d * inv_d / m};
  }
  const float rms = std::sqrt(mean_sq);
  const float inv_d = 1.0f / (rms + cfg.eps);
  return {inv_d, rms > 0.0f ? inv_d * inv_d / (m * rms) : 0.0f};
}

// y = a / D · g (+ b); b may be null.
inline void rms_row_forward(const float* a, const float* g, const float* b, float* y, int64_t n, float inv_d) {
  if (b) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] * inv_d * g[i] + b[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] * inv_d * g[i];
  }
}

// dL/da_j = g_j δ_j / D − [j < k] · (Σ_i g_i δ_i a_i) · a_j · c; dg += δ a / D, db += δ.
// One pass writes dx and the row's terms of dg and db, so each element of δ
// and a is loaded once after the dot product.
template <bool Assign>
void rms_row_backward(const float* a, const float* g, const float* d, int64_t n, int64_t k, RmsStats s, float* dx,
                      float* dg, float* db) {
  const float inv_d = s.inv_d;
  const float t = dx ? dot3(g, d, a, n) * s.coef : 0.0f;
  // pRMSNorm (k < n) takes the second term off its first k units in a pass
  // of their own: one full-width loop and one of k, rather than two loops
  // that meet at an unaligned k, each with a scalar remainder.
  const auto full_width = [&](auto whole_row) {
    constexpr bool second_term = decltype(whole_row)::value;
    fused_rows::with_outputs(dx, dg, db, [&](auto has_dx, auto has_dg, auto has_db) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (decltype(has_dx)::value) {
          float v = (Assign ? 0.0f : dx[i]) + inv_d * g[i] * d[i];  // in a register, stored once
          if constexpr (second_term) v -= t * a[i];
          dx[i] = v;
        }
        if constexpr (decltype(has_dg)::value) dg[i] += d[i] * a[i] * inv_d;
        if constexpr (decltype(has_db)::value) db[i] += d[i];
      }
    });
  };
  k == n ? full_width(std::true_type{}) : full_width(std::false_type{});
  if (dx && k < n) {
#pragma omp simd
    for (int64_t i = 0; i < k; ++i) dx[i] -= t * a[i];
  }
}

// -------------------------------------------------------------- LayerNorm

struct LayerStats {
  float mean, inv_std;
};

inline LayerStats layer_row_stats(const float* a, int64_t n, float eps) {
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mu = sum_of(a, n) * inv_n;
  const float var = lane_sum(n, [a, mu](int64_t i) { return (a[i] - mu) * (a[i] - mu); });
  return {mu, 1.0f / std::sqrt(var * inv_n + eps)};
}

// y = (a − μ) r · g + b; b may be null.
inline void layer_row_forward(const float* a, const float* g, const float* b, float* y, int64_t n, LayerStats s) {
  const float mu = s.mean, inv_std = s.inv_std;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = (a[i] - mu) * inv_std * g[i] + (b ? b[i] : 0.0f);
}

// dL/da_j = r · (h_j − mean(h) − â_j · mean(h ⊙ â)), h = g ⊙ δ; dg += δ â, db += δ.
template <bool Assign>
void layer_row_backward(const float* a, const float* g, const float* d, int64_t n, LayerStats s, float* dx,
                        float* dg, float* db) {
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mu = s.mean, inv_std = s.inv_std;
  float h_mean = 0.0f, hah_mean = 0.0f;
  if (dx) {
    h_mean = dot(g, d, n) * inv_n;  // mean of h and of h â, h = g δ
    hah_mean = lane_sum(n, [a, d, g, mu](int64_t i) { return g[i] * d[i] * (a[i] - mu); }) * inv_std * inv_n;
  }
  fused_rows::with_outputs(dx, dg, db, [&](auto has_dx, auto has_dg, auto has_db) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float a_hat = (a[i] - mu) * inv_std;
      if constexpr (decltype(has_dx)::value)
        dx[i] = (Assign ? 0.0f : dx[i]) + inv_std * (g[i] * d[i] - h_mean - a_hat * hah_mean);
      if constexpr (decltype(has_dg)::value) dg[i] += d[i] * a_hat;
      if constexpr (decltype(has_db)::value) db[i] += d[i];
    }
  });
}

// ------------------------------------------------- a RowNorm on raw rows

// A RowNorm (norm_ops.h) bound to its parameters' values, for a kernel's
// inner loop. Statistics are two floats a row for every kind.
struct RowKernel {
  RowNormKind kind = RowNormKind::None;
  int64_t n = 0, k = 0;
  float m = 1.0f;
  RmsNormConfig config;
  const float *g = nullptr, *b = nullptr;

  RowKernel() = default;
  RowKernel(const RowNorm& norm, int64_t n_units) : kind(norm.kind), n(n_units), config(norm.config) {
    if (kind == RowNormKind::None) return;
    k = config.k > 0 ? config.k : n;
    m = rms_divisor(config, k);
    g = norm.gain.value().data();
    b = norm.bias.defined() ? norm.bias.value().data() : nullptr;
  }
  bool normalizes() const { return kind != RowNormKind::None; }
  // The same norm reading its gain and bias from an op's inputs (add_norm_inputs
  // says where), as a backward should: their values as they are then.
  RowKernel with_parameters(const Node& node, size_t gain_at, size_t bias_at) const {
    RowKernel bound = *this;
    if (gain_at) bound.g = node.inputs[gain_at]->value.data();
    if (bias_at) bound.b = node.inputs[bias_at]->value.data();
    return bound;
  }

  // y = norm(a), its statistics into stats[0..1]. Only for a normalizing kind.
  void forward(const float* a, float* y, float* stats) const {
    if (kind == RowNormKind::Layer) {
      const LayerStats s = layer_row_stats(a, n, config.eps);
      stats[0] = s.mean, stats[1] = s.inv_std;
      layer_row_forward(a, g, b, y, n, s);
    } else {
      const RmsStats s = rms_row_stats(a, k, m, config);
      stats[0] = s.inv_d, stats[1] = s.coef;
      rms_row_forward(a, g, b, y, n, s.inv_d);
    }
  }
  // y = norm(a) again from the saved statistics (a recomputation in backward).
  void recompute(const float* a, const float* stats, float* y) const {
    if (kind == RowNormKind::Layer)
      layer_row_forward(a, g, b, y, n, {stats[0], stats[1]});
    else
      rms_row_forward(a, g, b, y, n, stats[0]);
  }
  // From δ = dL/dy: dx written (fresh) or added; the row's terms added to dg and db.
  void backward(bool fresh, const float* a, const float* d, const float* stats, float* dx, float* dg,
                float* db) const {
    if (fresh)
      backward<true>(a, d, stats, dx, dg, db);
    else
      backward<false>(a, d, stats, dx, dg, db);
  }
  template <bool Assign>
  void backward(const float* a, const float* d, const float* stats, float* dx, float* dg, float* db) const {
    if (kind == RowNormKind::Layer)
      layer_row_backward<Assign>(a, g, d, n, {stats[0], stats[1]}, dx, dg, db);
    else
      rms_row_backward<Assign>(a, g, d, n, k, {stats[0], stats[1]}, dx, dg, db);
  }
};

// ------------------------------------------- a RowNorm inside another op

// Checks a norm's parameters and settings against its rows of n units.
inline void check_row_norm(const char* op, const char* what, const RowNorm& norm, int64_t n) {
  if (norm.kind == RowNormKind::None) return;
  check(n > 0, "{}: {} cannot normalize rows of length 0", op, what);
  check(norm.gain.defined() && norm.gain.shape() == Shape{n}, "{}: {} gain {} must be [{}]", op, what,
        shape_of(norm.gain), n);
  if (norm.bias.defined())  // check() evaluates its arguments, so bias.shape() only when there is a bias
    check(norm.bias.shape() == Shape{n}, "{}: {} bias {} must be [{}]", op, what, norm.bias.shape(), n);
  check(norm.kind != RowNormKind::Rms || norm.config.k <= n, "{}: {} k = {} exceeds the row length {}", op, what,
        norm.config.k, n);
  check(norm.config.eps >= 0.0f, "{}: {} eps must be non-negative, got {}", op, what, norm.config.eps);
}

// Appends a norm's parameters to an op's inputs; returns where its gain and
// bias sit among them (0: none, as input 0 is never a norm's parameter).
// In backward, parameter_grad(node, at) is that parameter's gradient, or null.
inline std::pair<size_t, size_t> add_norm_inputs(const RowNorm& norm, std::vector<Var>& inputs) {
  if (norm.kind == RowNormKind::None) return {0, 0};
  inputs.push_back(norm.gain);
  if (!norm.bias.defined()) return {inputs.size() - 1, 0};
  inputs.push_back(norm.bias);
  return {inputs.size() - 2, inputs.size() - 1};
}
inline Tensor* parameter_grad(Node& node, size_t at) { return at ? node.input_grad(at) : nullptr; }

}  // namespace rg::row_norms
