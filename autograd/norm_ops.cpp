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
// GroupNorm: for one sample n and group g, a is the block of m = (C/G)·S
// values of its C/G channels at all S positions (contiguous in x [N, C, *]),
// and c(i) is the channel of element i. With μ, σ², r and â as LayerNorm's over
// the block and w, b the per-channel weight and bias:
//   y_i = w_c(i) â_i + b_c(i)
// â_i depends on a_j directly and through μ and r. From ∂μ/∂a_j = 1/m and
// ∂σ²/∂a_j = 2(a_j − μ)/m (the −μ terms sum to zero), ∂r/∂a_j = −r³(a_j − μ)/m, so
//   ∂â_i/∂a_j = r · ([i = j] − 1/m − â_i â_j / m)
// and with h_i = w_c(i) δ_i, summing h_i ∂â_i/∂a_j over the block,
//   dL/da_j = r · (h_j − mean(h) − â_j · mean(h ⊙ â))
// LayerNorm's formula, with a gain that is constant over each channel's S
// values. The block sums it needs are sums over channels of per-channel sums,
//   Σ h = Σ_c w_c Σ_s δ,   Σ h â = r · Σ_c w_c Σ_s δ (a − μ),
// and those per-channel sums are the parameter gradients' terms:
//   dL/dw_c = Σ_{n, s} δ â,   dL/db_c = Σ_{n, s} δ
// Saved per (n, g): μ and r.
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

#include "rmsgrad/autograd/row_norms.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/reduce_row.h"

namespace rg {

namespace {

using namespace fused_rows;
using namespace row_norms;

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

// ---------------------------------------------------------------- RMSNorm

struct RmsSaved {
  std::vector<float> inv_d, coef;  // per row: 1/D and c
};

void rms_forward(const float* x, const float* g, const float* b, float* y, const RowView& v, int64_t k,
                 const RmsNormConfig& cfg, RmsSaved& saved) {
  const float m = rms_divisor(cfg, k);
  parallel_for(v.rows, row_grain(v.n), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* a = x + r * v.n;
      float* out = y + r * v.n;
      const RmsStats s = rms_row_stats(a, k, m, cfg);
      saved.inv_d[r] = s.inv_d;
      saved.coef[r] = s.coef;
      if (v.channels) {
        const int64_t c = r % v.channels;
        const float scale = g[c] * s.inv_d, shift = b ? b[c] : 0.0f;
#pragma omp simd
        for (int64_t i = 0; i < v.n; ++i) out[i] = a[i] * scale + shift;
      } else {
        rms_row_forward(a, g, b, out, v.n, s.inv_d);
      }
    }
  });
}

// `Assign`: dx is a fresh buffer to write, not one to add into.
template <bool Assign>
void rms_backward(const float* x, const float* g, const float* dy, float* dx, Tensor* dgain, Tensor* dbias,
                  const RowView& v, int64_t k, const RmsSaved& saved) {
  rows_with_partials(v.rows, row_grain(v.n), partial_len(v), dgain, dbias, [&](int64_t lo, int64_t hi, float* dg,
                                                                                 float* db) {
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
      rms_row_backward<Assign>(a, g, d, v.n, k, {inv_d, saved.coef[r]}, dx ? dx + r * v.n : nullptr, dg, db);
    }
  });
}

// -------------------------------------------------------------- LayerNorm

struct LayerSaved {
  std::vector<float> mean, inv_std;
};

void layer_forward(const float* x, const float* g, const float* b, float* y, const RowView& v, float eps,
                   LayerSaved& saved) {
  parallel_for(v.rows, row_grain(v.n), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* a = x + r * v.n;
      float* out = y + r * v.n;
      const LayerStats s = layer_row_stats(a, v.n, eps);
      saved.mean[r] = s.mean;
      saved.inv_std[r] = s.inv_std;
      if (v.channels) {
        const int64_t c = r % v.channels;
        const float scale = g[c] * s.inv_std, shift = (b ? b[c] : 0.0f) - s.mean * scale;
#pragma omp simd
        for (int64_t i = 0; i < v.n; ++i) out[i] = a[i] * scale + shift;
      } else {
        layer_row_forward(a, g, b, out, v.n, s);
      }
    }
  });
}

template <bool Assign>
void layer_backward(const float* x, const float* g, const float* dy, float* dx, Tensor* dgain, Tensor* dbias,
                    const RowView& v, const LayerSaved& saved) {
  const float inv_n = 1.0f / static_cast<float>(v.n);
  rows_with_partials(v.rows, row_grain(v.n), partial_len(v), dgain, dbias, [&](int64_t lo, int64_t hi, float* dg,
                                                                                 float* db) {
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
      layer_row_backward<Assign>(a, g, d, v.n, {mu, inv_std}, dx ? dx + r * v.n : nullptr, dg, db);
    }
  });
}

// -------------------------------------------------------------- GroupNorm

// x [N, C, *] as N·G blocks of `channels` = C/G channel maps of `s` values.
struct GroupView {
  int64_t blocks, groups, channels, s;
  int64_t block() const { return channels * s; }
};

struct GroupSaved {
  std::vector<float> mean, inv_std;  // per block
};

// w, b: [C] or null (1 and 0).
void group_forward(const float* x, const float* w, const float* b, float* y, const GroupView& v, float eps,
                   GroupSaved& saved) {
  const int64_t m = v.block();
  const float inv_m = 1.0f / static_cast<float>(m);
  parallel_for(v.blocks, row_grain(m), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* a = x + r * m;
      float* out = y + r * m;
      const float mu = sum_of(a, m) * inv_m;
      const float var = lane_sum(m, [a, mu](int64_t i) { return (a[i] - mu) * (a[i] - mu); });
      const float inv_std = 1.0f / std::sqrt(var * inv_m + eps);
      saved.mean[r] = mu;
      saved.inv_std[r] = inv_std;
      for (int64_t j = 0; j < v.channels; ++j) {
        const int64_t c = (r % v.groups) * v.channels + j;
        const float scale = (w ? w[c] : 1.0f) * inv_std, shift = (b ? b[c] : 0.0f) - mu * scale;
        const float* in = a + j * v.s;
        float* o = out + j * v.s;
#pragma omp simd
        for (int64_t i = 0; i < v.s; ++i) o[i] = in[i] * scale + shift;
      }
    }
  });
}

// `Assign`: dx is a fresh buffer to write, not one to add into. dweight and
// dbias [C] (either may be null) receive the sums over every sample.
template <bool Assign>
void group_backward(const float* x, const float* w, const float* dy, float* dx, Tensor* dweight, Tensor* dbias,
                    const GroupView& v, const GroupSaved& saved) {
  const int64_t m = v.block();
  const float inv_m = 1.0f / static_cast<float>(m);
  rows_with_partials(v.blocks, row_grain(m), v.groups * v.channels, dweight, dbias, [&](int64_t lo, int64_t hi,
                                                                                        float* dw, float* db) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* a = x + r * m;
      const float* d = dy + r * m;
      const float mu = saved.mean[r], inv_std = saved.inv_std[r];
      const int64_t first = (r % v.groups) * v.channels;  // the group's first channel
      float h_sum = 0.0f, hah_sum = 0.0f;                  // Σ h and Σ h â over the block
      for (int64_t j = 0; j < v.channels; ++j) {
        const float* aj = a + j * v.s;
        const float* dj = d + j * v.s;
        const float d_sum = sum_of(dj, v.s);
        const float dah_sum = lane_sum(v.s, [aj, dj, mu](int64_t i) { return dj[i] * (aj[i] - mu); }) * inv_std;
        const float wc = w ? w[first + j] : 1.0f;
        h_sum += wc * d_sum;
        hah_sum += wc * dah_sum;
        if (dw) dw[first + j] += dah_sum;
        if (db) db[first + j] += d_sum;
      }
      if (!dx) continue;
      const float h_mean = h_sum * inv_m, hah_mean = hah_sum * inv_m;
      for (int64_t j = 0; j < v.channels; ++j) {
        const float* aj = a + j * v.s;
        const float* dj = d + j * v.s;
        float* o = dx + r * m + j * v.s;
        const float wc = w ? w[first + j] : 1.0f;
#pragma omp simd
        for (int64_t i = 0; i < v.s; ++i)
          o[i] = (Assign ? 0.0f : o[i]) + inv_std * (wc * dj[i] - h_mean - (aj[i] - mu) * inv_std * hah_mean);
      }
    }
  });
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

Var group_norm(const Var& x, int64_t groups, const Var& weight, const Var& bias, float eps) {
  check(x.defined(), "group_norm: undefined input");
  check(x.rank() >= 2, "group_norm: input must be [N, C, *], got {}", x.shape());
  const int64_t c = x.dim(1);
  check(groups >= 1 && c % groups == 0, "group_norm: {} groups do not divide the {} channels of input {}", groups, c,
        x.shape());
  if (weight.defined())  // check() evaluates its arguments, so weight.shape() only when there is a weight
    check(weight.shape() == Shape{c}, "group_norm: weight {} must be [{}] for input {}", weight.shape(), c,
          x.shape());
  if (bias.defined())
    check(bias.shape() == Shape{c}, "group_norm: bias {} must be [{}] for input {}", bias.shape(), c, x.shape());
  check(eps >= 0.0f, "group_norm: eps must be non-negative, got {}", eps);
  const GroupView v{x.dim(0) * groups, groups, c / groups, x.numel() / std::max<int64_t>(x.dim(0) * c, 1)};
  check(v.block() > 0, "group_norm: cannot normalize empty groups (input {})", x.shape());
  auto saved = std::make_shared<GroupSaved>();
  saved->mean.resize(v.blocks);
  saved->inv_std.resize(v.blocks);
  Tensor y = Tensor::empty(x.shape());
  group_forward(x.value().data(), weight.defined() ? weight.value().data() : nullptr,
                bias.defined() ? bias.value().data() : nullptr, y.data(), v, eps, *saved);
  std::vector<Var> inputs{x};
  const size_t weight_at = weight.defined() ? inputs.size() : 0;  // 0: none (x is input 0)
  if (weight.defined()) inputs.push_back(weight);
  const size_t bias_at = bias.defined() ? inputs.size() : 0;
  if (bias.defined()) inputs.push_back(bias);
  return tape().record("group_norm", std::move(y), inputs, [v, saved, weight_at, bias_at](Node& n) {
    bool assign = false;
    Tensor* dx = n.input_grad(0, assign);
    Tensor* dw = weight_at ? n.input_grad(weight_at) : nullptr;
    Tensor* db = bias_at ? n.input_grad(bias_at) : nullptr;
    const float* w = weight_at ? n.inputs[weight_at]->value.data() : nullptr;
    auto backward = assign ? group_backward<true> : group_backward<false>;
    backward(n.inputs[0]->value.data(), w, n.grad.data(), dx ? dx->data() : nullptr, dw, db, v, *saved);
  });
}

}  // namespace rg
