// Fused RMSNorm / pRMSNorm / L2-Norm and LayerNorm (Zhang & Sennrich 2019;
// Ba et al. 2016), forward and backward side by side.
//
// RMSNorm family, for one row a of n units, gain g, incoming gradient δ:
//   q  = Σ_{i<k} a_i²                 (k = n for RMSNorm, k < n for pRMSNorm)
//   D  = sqrt(q/m + ε)                m = k (RMS) or 1 (L2-Norm); ε inside
//   D  = sqrt(q/m) + ε                ε outside (rmsnorm_torch.py)
//   y_i = g_i a_i / D (+ b_i)
// Backward, with s = Σ_i g_i δ_i a_i over all n units:
//   dL/da_j = g_j δ_j / D − [j < k] · s · a_j · c,
//   c = 1 / (m D³)                    ε inside
//   c = 1 / (m D² sqrt(q/m))          ε outside
//   dL/dg_i = Σ_rows δ_i a_i / D,   dL/db_i = Σ_rows δ_i
// Only the first k units receive the second term: the others do not enter D.
// Saved per row: 1/D and c. Nothing of size n·rows is saved beyond x itself.
//
// LayerNorm, μ = mean(a), σ² = mean((a − μ)²), r = 1/sqrt(σ² + ε), â = (a − μ) r:
//   y_i = g_i â_i + b_i
//   dL/da_j = r · (h_j − mean(h) − â_j · mean(h ⊙ â)),   h = g ⊙ δ
// Saved per row: μ and r.
//
// Costs per element: RMSNorm's forward makes one reduction pass and one
// output pass; LayerNorm's makes two reduction passes (mean, then variance).
// RMSNorm's backward has one dot product per row, LayerNorm's two.
//
// Gain and bias gradients sum over rows; every thread keeps its own partial
// sums (one row of n, or C for channel gains) and they are added at the end.
#include "rmsgrad/autograd/norm_ops.h"

#include <cmath>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/reduce_row.h"

namespace rg {

namespace {

// Rows of length n; gain index of row r is r % channels in channel layout.
struct RowView {
  int64_t rows, n, channels;  // channels = 0 for feature layout
};

RowView view_rows(const char* op, const Var& x, const Var& gain, const Var& bias, NormLayout layout) {
  check(x.defined() && gain.defined(), "{}: undefined input or gain", op);
  RowView v{};
  if (layout == NormLayout::Features) {
    check(x.rank() >= 1, "{}: input must have at least one axis, got a scalar", op);
    v.n = x.dim(-1);
    v.rows = x.numel() / std::max<int64_t>(v.n, 1);
    check(gain.shape() == Shape{v.n}, "{}: gain {} must be [{}] for input {}", op, gain.shape(), v.n, x.shape());
    if (bias.defined())  // check() evaluates its arguments, so bias.shape() only when there is a bias
      check(bias.shape() == Shape{v.n}, "{}: bias {} must be [{}] for input {}", op, bias.shape(), v.n, x.shape());
  } else {
    check(x.rank() == 4, "{}: channel layout needs [N, C, H, W], got {}", op, x.shape());
    v.channels = x.dim(1);
    v.n = x.dim(2) * x.dim(3);
    v.rows = x.dim(0) * v.channels;
    check(gain.shape() == Shape{v.channels}, "{}: gain {} must be [{}] for input {}", op, gain.shape(),
          v.channels, x.shape());
    if (bias.defined())
      check(bias.shape() == Shape{v.channels}, "{}: bias {} must be [{}] for input {}", op, bias.shape(),
            v.channels, x.shape());
  }
  check(v.n > 0, "{}: cannot normalize rows of length 0 (input {})", op, x.shape());
  return v;
}

int64_t row_grain(int64_t n) { return std::max<int64_t>(1, 16384 / n); }

// The length of the per-thread partial sums of dg / db.
int64_t partial_len(const RowView& v) { return v.channels ? v.channels : v.n; }

// Adds each chunk's partial sums into the parameter gradient.
void reduce_partials(Tensor* grad, const std::vector<float>& partials, int64_t chunks, int64_t len) {
  if (!grad) return;
  float* d = grad->data();
  for (int64_t c = 0; c < chunks; ++c) {
    const float* p = partials.data() + c * len;
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) d[i] += p[i];
  }
}

// ---------------------------------------------------------------- RMSNorm

struct RmsSaved {
  std::vector<float> inv_d, coef;  // per row: 1/D and c
};

void rms_forward(const float* x, const float* g, const float* b, float* y, const RowView& v, int64_t k,
                 const RmsNormConfig& cfg, RmsSaved& saved) {
  const float m = cfg.l2 ? 1.0f : static_cast<float>(k);
  parallel_for(v.rows, row_grain(v.n), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* a = x + r * v.n;
      float* out = y + r * v.n;
      const float q = sum_of_squares(a, k);
      float mean_sq = q / m, inv_d, coef;
      if (cfg.eps_inside) {
        inv_d = 1.0f / std::sqrt(mean_sq + cfg.eps);
        coef = inv_d * inv_d * inv_d / m;
      } else {
        float rms = std::sqrt(mean_sq);
        inv_d = 1.0f / (rms + cfg.eps);
        coef = rms > 0.0f ? inv_d * inv_d / (m * rms) : 0.0f;
      }
      saved.inv_d[r] = inv_d;
      saved.coef[r] = coef;
      if (v.channels) {
        const int64_t c = r % v.channels;
        const float scale = g[c] * inv_d, shift = b ? b[c] : 0.0f;
#pragma omp simd
        for (int64_t i = 0; i < v.n; ++i) out[i] = a[i] * scale + shift;
      } else if (b) {
#pragma omp simd
        for (int64_t i = 0; i < v.n; ++i) out[i] = a[i] * inv_d * g[i] + b[i];
      } else {
#pragma omp simd
        for (int64_t i = 0; i < v.n; ++i) out[i] = a[i] * inv_d * g[i];
      }
    }
  });
}

// `Assign`: dx is a fresh buffer to write, not one to add into.
template <bool Assign>
void rms_backward(const float* x, const float* g, const float* dy, float* dx, Tensor* dgain, Tensor* dbias,
                  const RowView& v, int64_t k, const RmsSaved& saved) {
  const int64_t len = partial_len(v);
  const int64_t chunks = chunk_count(v.rows, row_grain(v.n));
  std::vector<float> dg_part(dgain ? chunks * len : 0, 0.0f), db_part(dbias ? chunks * len : 0, 0.0f);
  parallel_for_chunks(v.rows, row_grain(v.n), [&](int64_t chunk, int64_t lo, int64_t hi) {
    float* dg = dgain ? dg_part.data() + chunk * len : nullptr;
    float* db = dbias ? db_part.data() + chunk * len : nullptr;
    for (int64_t r = lo; r < hi; ++r) {
      const float* a = x + r * v.n;
      const float* d = dy + r * v.n;
      const float inv_d = saved.inv_d[r];
      if (v.channels) {  // one gain per row
        const int64_t c = r % v.channels;
        const float da_sum = dot(d, a, v.n), d_sum = sum_of(d, v.n);
        if (dx) {
          float* o = dx + r * v.n;
          const float scale = g[c] * inv_d, t = g[c] * da_sum * saved.coef[r];
#pragma omp simd
          for (int64_t i = 0; i < k; ++i) o[i] = (Assign ? 0.0f : o[i]) + scale * d[i] - t * a[i];
#pragma omp simd
          for (int64_t i = k; i < v.n; ++i) o[i] = (Assign ? 0.0f : o[i]) + scale * d[i];
        }
        if (dg) dg[c] += da_sum * inv_d;
        if (db) db[c] += d_sum;
        continue;
      }
      // One pass writes dx and adds this row's terms to dg and db, so each
      // element of δ and x is loaded once after the dot product.
      const float t = dx ? dot3(g, d, a, v.n) * saved.coef[r] : 0.0f;
      float* o = dx ? dx + r * v.n : nullptr;
      auto element = [&](int64_t i, bool in_rms) {
        if (o) o[i] = (Assign ? 0.0f : o[i]) + inv_d * g[i] * d[i] - (in_rms ? t * a[i] : 0.0f);
        if (dg) dg[i] += d[i] * a[i] * inv_d;
        if (db) db[i] += d[i];
      };
#pragma omp simd
      for (int64_t i = 0; i < k; ++i) element(i, true);
#pragma omp simd
      for (int64_t i = k; i < v.n; ++i) element(i, false);
    }
  });
  reduce_partials(dgain, dg_part, chunks, len);
  reduce_partials(dbias, db_part, chunks, len);
}

// -------------------------------------------------------------- LayerNorm

struct LayerSaved {
  std::vector<float> mean, inv_std;
};

void layer_forward(const float* x, const float* g, const float* b, float* y, const RowView& v, float eps,
                   LayerSaved& saved) {
  const float inv_n = 1.0f / static_cast<float>(v.n);
  parallel_for(v.rows, row_grain(v.n), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* a = x + r * v.n;
      float* out = y + r * v.n;
      const float mu = sum_of(a, v.n) * inv_n;
      const float var = lane_sum(v.n, [a, mu](int64_t i) { return (a[i] - mu) * (a[i] - mu); });
      const float inv_std = 1.0f / std::sqrt(var * inv_n + eps);
      saved.mean[r] = mu;
      saved.inv_std[r] = inv_std;
      if (v.channels) {
        const int64_t c = r % v.channels;
        const float scale = g[c] * inv_std, shift = (b ? b[c] : 0.0f) - mu * scale;
#pragma omp simd
        for (int64_t i = 0; i < v.n; ++i) out[i] = a[i] * scale + shift;
      } else {
#pragma omp simd
        for (int64_t i = 0; i < v.n; ++i) out[i] = (a[i] - mu) * inv_std * g[i] + (b ? b[i] : 0.0f);
      }
    }
  });
}

template <bool Assign>
void layer_backward(const float* x, const float* g, const float* dy, float* dx, Tensor* dgain, Tensor* dbias,
                    const RowView& v, const LayerSaved& saved) {
  const int64_t len = partial_len(v);
  const int64_t chunks = chunk_count(v.rows, row_grain(v.n));
  const float inv_n = 1.0f / static_cast<float>(v.n);
  std::vector<float> dg_part(dgain ? chunks * len : 0, 0.0f), db_part(dbias ? chunks * len : 0, 0.0f);
  parallel_for_chunks(v.rows, row_grain(v.n), [&](int64_t chunk, int64_t lo, int64_t hi) {
    float* dg = dgain ? dg_part.data() + chunk * len : nullptr;
    float* db = dbias ? db_part.data() + chunk * len : nullptr;
    for (int64_t r = lo; r < hi; ++r) {
      const float* a = x + r * v.n;
      const float* d = dy + r * v.n;
      const float mu = saved.mean[r], inv_std = saved.inv_std[r];
      if (v.channels) {
        const int64_t c = r % v.channels;
        const float d_sum = sum_of(d, v.n);  // Σ δ and Σ δ â
        const float dah_sum = lane_sum(v.n, [a, d, mu](int64_t i) { return d[i] * (a[i] - mu); }) * inv_std;
        if (dx) {
          float* o = dx + r * v.n;
          const float h_mean = g[c] * d_sum * inv_n, hah_mean = g[c] * dah_sum * inv_n;
#pragma omp simd
          for (int64_t i = 0; i < v.n; ++i)
            o[i] = (Assign ? 0.0f : o[i]) + inv_std * (g[c] * d[i] - h_mean - (a[i] - mu) * inv_std * hah_mean);
        }
        if (dg) dg[c] += dah_sum;
        if (db) db[c] += d_sum;
        continue;
      }
      float h_mean = 0.0f, hah_mean = 0.0f;
      if (dx) {
        h_mean = dot(g, d, v.n) * inv_n;  // mean of h and of h â, h = g δ
        hah_mean = lane_sum(v.n, [a, d, g, mu](int64_t i) { return g[i] * d[i] * (a[i] - mu); }) * inv_std * inv_n;
      }
      float* o = dx ? dx + r * v.n : nullptr;
#pragma omp simd
      for (int64_t i = 0; i < v.n; ++i) {
        const float a_hat = (a[i] - mu) * inv_std;
        if (o) o[i] = (Assign ? 0.0f : o[i]) + inv_std * (g[i] * d[i] - h_mean - a_hat * hah_mean);
        if (dg) dg[i] += d[i] * a_hat;
        if (db) db[i] += d[i];
      }
    }
  });
  reduce_partials(dgain, dg_part, chunks, len);
  reduce_partials(dbias, db_part, chunks, len);
}

}  // namespace

Var rms_norm(const Var& x, const Var& gain, const Var& bias, const RmsNormConfig& config, NormLayout layout) {
  const char* op = config.l2 ? "l2_norm" : (config.k > 0 ? "prms_norm" : "rms_norm");
  RowView v = view_rows(op, x, gain, bias, layout);
  const int64_t k = config.k > 0 ? config.k : v.n;
  check(k <= v.n, "{}: k = {} exceeds the row length {} of input {}", op, k, v.n, x.shape());
  check(config.eps >= 0.0f, "{}: eps must be non-negative, got {}", op, config.eps);
  auto saved = std::make_shared<RmsSaved>();
  saved->inv_d.resize(v.rows);
  saved->coef.resize(v.rows);
  Tensor y = Tensor::empty(x.shape());
  rms_forward(x.value().data(), gain.value().data(), bias.defined() ? bias.value().data() : nullptr, y.data(), v,
              k, config, *saved);
  std::vector<Var> inputs{x, gain};
  if (bias.defined()) inputs.push_back(bias);
  return tape().record(op, std::move(y), inputs, [v, k, saved](Node& n) {
    bool assign = false;
    Tensor* dx = n.input_grad(0, assign);
    Tensor* dg = n.input_grad(1);
    Tensor* db = n.inputs.size() > 2 ? n.input_grad(2) : nullptr;
    auto backward = assign ? rms_backward<true> : rms_backward<false>;
    backward(n.inputs[0]->value.data(), n.inputs[1]->value.data(), n.grad.data(), dx ? dx->data() : nullptr, dg, db,
             v, k, *saved);
  });
}

Var layer_norm(const Var& x, const Var& gain, const Var& bias, float eps, NormLayout layout) {
  RowView v = view_rows("layer_norm", x, gain, bias, layout);
  check(eps >= 0.0f, "layer_norm: eps must be non-negative, got {}", eps);
  auto saved = std::make_shared<LayerSaved>();
  saved->mean.resize(v.rows);
  saved->inv_std.resize(v.rows);
  Tensor y = Tensor::empty(x.shape());
  layer_forward(x.value().data(), gain.value().data(), bias.defined() ? bias.value().data() : nullptr, y.data(),
                v, eps, *saved);
  std::vector<Var> inputs{x, gain};
  if (bias.defined()) inputs.push_back(bias);
  return tape().record("layer_norm", std::move(y), inputs, [v, saved](Node& n) {
    bool assign = false;
    Tensor* dx = n.input_grad(0, assign);
    Tensor* dg = n.input_grad(1);
    Tensor* db = n.inputs.size() > 2 ? n.input_grad(2) : nullptr;
    auto backward = assign ? layer_backward<true> : layer_backward<false>;
    backward(n.inputs[0]->value.data(), n.inputs[1]->value.data(), n.grad.data(), dx ? dx->data() : nullptr, dg, db,
             v, *saved);
  });
}

}  // namespace rg
