#include "rmsgrad/autograd/composed_norm_ops.h"

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"

namespace rg {

namespace {

// The rows a norm works on, as a Var whose last axis is the row: x itself in
// the feature layout; [N, C, H·W] for conv maps [N, C, H, W] in the channel
// layout. per_row() makes a gain or bias broadcast against those rows: [n]
// stays [n] for features, [C] becomes [C, 1] (one per channel) for maps.
struct Rows {
  Var rows;
  NormLayout layout;
  Shape original;

  Var per_row(const Var& gain_or_bias) const {
    if (layout == NormLayout::Features) return gain_or_bias;
    return reshape(gain_or_bias, {gain_or_bias.dim(0), 1});
  }
  Var restore(const Var& y) const { return layout == NormLayout::Features ? y : reshape(y, original.dims()); }
};

Rows as_rows(const char* op, const Var& x, const Var& gain, const Var& bias, NormLayout layout) {
  check(x.defined() && gain.defined() && x.rank() >= 1, "{}: undefined input or gain, or a scalar input", op);
  const int64_t n = layout == NormLayout::Features ? x.dim(-1) : x.rank() == 4 ? x.dim(1) : -1;
  check(n > 0, "{}: channel layout needs [N, C, H, W], got {}", op, x.shape());
  check(gain.shape() == Shape{n}, "{}: gain {} must be [{}] for input {}", op, gain.shape(), n, x.shape());
  if (bias.defined())
    check(bias.shape() == Shape{n}, "{}: bias {} must be [{}] for input {}", op, bias.shape(), n, x.shape());
  if (layout == NormLayout::Features) return {x, layout, x.shape()};
  return {reshape(x, {x.dim(0), x.dim(1), x.dim(2) * x.dim(3)}), layout, x.shape()};
}

}  // namespace

// q = mean(a²) over the first k units (the sum for L2-Norm),
// y = a / sqrt(q + ε) · g (+ b), or a / (sqrt(q) + ε) · g with ε outside.
Var composed_rms_norm(const Var& x, const Var& gain, const Var& bias, const RmsNormConfig& config,
                      NormLayout layout) {
  const Rows r = as_rows(config.l2 ? "l2norm (composed)" : "rmsnorm (composed)", x, gain, bias, layout);
  const int64_t n = r.rows.dim(-1);
  check(config.k >= 0 && config.k <= n, "rmsnorm (composed): k = {} is outside [0, {}]", config.k, n);
  const int64_t k = config.k > 0 ? config.k : n;
  Var part = k < n ? slice(r.rows, -1, 0, k) : r.rows;  // pRMSNorm: only the first k units
  Var squares = square(part);
  Var statistic = config.l2 ? sum(squares, -1, true) : mean(squares, -1, true);
  Var inverse = config.eps_inside ? rsqrt(statistic + config.eps) : 1.0f / (sqrt(statistic) + config.eps);
  Var scaled = r.rows * inverse * r.per_row(gain);
  return r.restore(bias.defined() ? scaled + r.per_row(bias) : scaled);
}

// μ = mean(a), σ² = mean((a − μ)²), y = (a − μ) / sqrt(σ² + ε) · g + b.
Var composed_layer_norm(const Var& x, const Var& gain, const Var& bias, float eps, NormLayout layout) {
  const Rows r = as_rows("layernorm (composed)", x, gain, bias, layout);
  check(bias.defined(), "layernorm (composed): needs a bias");
  Var mu = mean(r.rows, -1, true);
  Var centered = r.rows - mu;
  Var variance = mean(square(centered), -1, true);
  Var normalized = centered * rsqrt(variance + eps);
  return r.restore(normalized * r.per_row(gain) + r.per_row(bias));
}

// Per channel c, over the batch and (for maps) H·W, M values in all:
// training    y = (a − μ_c) / sqrt(σ²_c + ε) · g_c + b_c with the batch's μ
//             and biased σ²; the running statistics move towards μ and the
//             unbiased σ² · M/(M − 1), outside the tape;
// evaluation  the same with the running statistics, constants.
Var composed_batch_norm(const Var& x, const Var& gain, const Var& bias, BatchNormState& state, bool training) {
  check(x.defined() && gain.defined() && bias.defined() && x.rank() >= 2,
        "batchnorm (composed): needs input [N, C, ...], gain and bias");
  const int64_t c = x.dim(1);
  check(gain.shape() == Shape{c} && bias.shape() == Shape{c}, "batchnorm (composed): gain {} and bias {} must be [{}]",
        gain.shape(), bias.shape(), c);
  const int64_t per_channel = x.numel() / (x.dim(0) * c);
  Var a = reshape(x, {x.dim(0), c, per_channel});  // [N, C, L]
  Var g = reshape(gain, {c, 1}), b = reshape(bias, {c, 1});
  if (!training) {
    Var mu = constant(state.running_mean.reshape(Shape{c, 1}));
    Var inverse = rsqrt(constant(state.running_var.reshape(Shape{c, 1})) + state.eps);
    return reshape((a - mu) * inverse * g + b, x.shape().dims());
  }
  const int64_t m = x.dim(0) * per_channel;
  check(m > 1, "batchnorm (composed): training needs more than one value per channel, input is {}", x.shape());
  Var mu = mean(mean(a, 2, true), 0, true);  // [1, C, 1]
  Var centered = a - mu;
  Var variance = mean(mean(square(centered), 2, true), 0, true);
  Var y = centered * rsqrt(variance + state.eps) * g + b;

  const float unbias = static_cast<float>(m) / static_cast<float>(m - 1);
  const float keep = 1.0f - state.momentum;
  for (int64_t i = 0; i < c; ++i) {
    float& running_mean = state.running_mean.data()[i];
    float& running_var = state.running_var.data()[i];
    running_mean = keep * running_mean + state.momentum * mu.value().data()[i];
    running_var = keep * running_var + state.momentum * variance.value().data()[i] * unbias;
  }
  return reshape(y, x.shape().dims());
}

}  // namespace rg
