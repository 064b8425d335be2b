// Batch normalization, forward and backward side by side.
//
// x is viewed as [N, C, L] (L = 1 for [N, C] input, H·W for conv maps); each
// channel c has M = N·L values. In training mode:
//   μ_c = mean over the M values,  σ²_c = biased variance,  r_c = 1/sqrt(σ²_c + ε)
//   x̂ = (x − μ_c) r_c,             y = g_c x̂ + b_c
//   running_mean ← (1 − m)·running_mean + m·μ_c
//   running_var  ← (1 − m)·running_var  + m·σ²_c · M/(M − 1)   (unbiased)
// Backward (the batch statistics depend on every x of the channel):
//   dx = (g_c r_c / M) · (M δ − Σ δ − x̂ Σ δ x̂),   dg_c = Σ δ x̂,   db_c = Σ δ
// In evaluation mode μ and σ² are the running statistics, constants, so
//   dx = g_c r_c δ.
// The running statistics are buffers, changed in place and never recorded.
#include "rmsgrad/autograd/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

struct View {
  int64_t n, c, l;
};

// Per-channel Σ f(i, c) over the batch, where i is the flat index of one of
// channel c's values; in double, so a long channel sums exactly enough.
//
// Conv maps (L > 1): channel c's values are N runs of L contiguous floats, so
// each thread takes whole channels and walks their runs. [N, C] input
// (L = 1, the LSTM's gate pre-activations): channel c is a column, and
// walking columns one by one strides through the whole matrix once per
// column, thrashing the cache. There each thread takes a block of rows and
// adds every row into its own C partial sums (a contiguous, vectorisable
// loop); the blocks' sums are added at the end.
template <class F>
std::vector<double> channel_sums(const View& v, F f) {
  std::vector<double> sums(v.c, 0.0);
  if (v.l == 1) {
    const int64_t grain = std::max<int64_t>(1, 16384 / v.c);
    const int64_t chunks = chunk_count(v.n, grain);
    std::vector<double> partial(static_cast<size_t>(chunks * v.c), 0.0);
    parallel_for_chunks(v.n, grain, [&](int64_t chunk, int64_t lo, int64_t hi) {
      double* acc = partial.data() + chunk * v.c;
      for (int64_t s = lo; s < hi; ++s)
        for (int64_t c = 0; c < v.c; ++c) acc[c] += f(s * v.c + c, c);
    });
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t c = 0; c < v.c; ++c) sums[c] += partial[chunk * v.c + c];
    return sums;
  }
  parallel_for(v.c, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      double acc = 0.0;
      for (int64_t s = 0; s < v.n; ++s) {
        const int64_t off = (s * v.c + c) * v.l;
        float part = 0.0f;
        for (int64_t i = 0; i < v.l; ++i) part += f(off + i, c);
        acc += part;
      }
      sums[c] = acc;
    }
  });
  return sums;
}

// Calls f(i, c) for every value, i its flat index and c its channel, in
// parallel and walking memory in order: for [N, C] input row by row (c runs
// along the row), for conv maps map by map.
template <class F>
void for_each_value(const View& v, F f) {
  if (v.l == 1) {
    parallel_for(v.n, std::max<int64_t>(1, kGrainElementwise / v.c), [&](int64_t lo, int64_t hi) {
      for (int64_t s = lo; s < hi; ++s)
        for (int64_t c = 0; c < v.c; ++c) f(s * v.c + c, c);
    });
    return;
  }
  parallel_for(v.n * v.c, std::max<int64_t>(1, 16384 / v.l), [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const int64_t c = row % v.c;
      for (int64_t i = row * v.l; i < (row + 1) * v.l; ++i) f(i, c);
    }
  });
}

// Σ over the processes, in place, when BatchNorm is synchronised.
void sum_over_processes(const StatisticsSum& sum, std::vector<double>& values) {
  if (sum) sum(values);
}

}  // namespace

Var batch_norm(const Var& x, const Var& gain, const Var& bias, BatchNormState& state, bool training) {
  check(x.defined() && gain.defined() && bias.defined(), "batch_norm: undefined input, gain or bias");
  check(x.rank() >= 2, "batch_norm: input must be [N, C] or [N, C, ...], got {}", x.shape());
  View v{x.dim(0), x.dim(1), x.numel() / std::max<int64_t>(1, x.dim(0) * x.dim(1))};
  const Shape channels{v.c};
  check(gain.shape() == channels && bias.shape() == channels, "batch_norm: gain {} and bias {} must be [{}] for {}",
        gain.shape(), bias.shape(), v.c, x.shape());
  check(state.running_mean.defined() && state.running_mean.shape() == channels &&
            state.running_var.defined() && state.running_var.shape() == channels,
        "batch_norm: running statistics must be [{}] for input {}", v.c, x.shape());
  // Values per channel: this batch's, or under synchronised BatchNorm the
  // global batch's (the local count travels with the sums).
  int64_t count = v.n * v.l;
  check(!training || count > 1, "batch_norm: training needs more than one value per channel, input is {}",
        x.shape());

  auto mean = std::make_shared<std::vector<float>>(v.c);
  auto inv_std = std::make_shared<std::vector<float>>(v.c);
  const float* px = x.value().data();
  if (training) {
    std::vector<double> sum = channel_sums(v, [px](int64_t i, int64_t) { return px[i]; });
    if (state.sum) {
      sum.push_back(static_cast<double>(count));
      sum_over_processes(state.sum, sum);
      count = static_cast<int64_t>(sum.back());
      sum.pop_back();
    }
    for (int64_t c = 0; c < v.c; ++c) (*mean)[c] = static_cast<float>(sum[c] / count);
    const std::vector<float>& mu = *mean;
    std::vector<double> sq =
        channel_sums(v, [px, &mu](int64_t i, int64_t c) { return (px[i] - mu[c]) * (px[i] - mu[c]); });
    sum_over_processes(state.sum, sq);
    float* rm = state.running_mean.data();
    float* rv = state.running_var.data();
    for (int64_t c = 0; c < v.c; ++c) {
      double var = sq[c] / count;
      (*inv_std)[c] = static_cast<float>(1.0 / std::sqrt(var + state.eps));
      rm[c] = (1.0f - state.momentum) * rm[c] + state.momentum * (*mean)[c];
      rv[c] = (1.0f - state.momentum) * rv[c] + state.momentum * static_cast<float>(var * count / (count - 1));
    }
  } else {
    for (int64_t c = 0; c < v.c; ++c) {
      (*mean)[c] = state.running_mean.data()[c];
      (*inv_std)[c] = 1.0f / std::sqrt(state.running_var.data()[c] + state.eps);
    }
  }

  Tensor y = Tensor::empty(x.shape());
  const float *g = gain.value().data(), *b = bias.value().data();
  float* py = y.data();
  std::vector<float> scale(v.c), shift(v.c);  // y = x · scale_c + shift_c
  for (int64_t c = 0; c < v.c; ++c) {
    scale[c] = g[c] * (*inv_std)[c];
    shift[c] = b[c] - (*mean)[c] * scale[c];
  }
  for_each_value(v, [px, py, sc = scale.data(), sh = shift.data()](int64_t i, int64_t c) {
    py[i] = px[i] * sc[c] + sh[c];
  });

  StatisticsSum sync = training ? state.sum : StatisticsSum();  // copied: the node may outlive the state
  return tape().record("batch_norm", std::move(y), {x, gain, bias},
                       [v, mean, inv_std, training, count, sync](Node& n) {
    const float* a = n.inputs[0]->value.data();
    const float* g = n.inputs[1]->value.data();
    const float* d = n.grad.data();
    const std::vector<float>& mu = *mean;
    const std::vector<float>& r = *inv_std;
    // Σ δ and Σ δ x̂ per channel.
    std::vector<double> d_sum = channel_sums(v, [d](int64_t i, int64_t) { return d[i]; });
    std::vector<double> dxh_sum =
        channel_sums(v, [a, d, &mu, &r](int64_t i, int64_t c) { return d[i] * (a[i] - mu[c]) * r[c]; });
    if (Tensor* dg = n.input_grad(1))
      for (int64_t c = 0; c < v.c; ++c) dg->data()[c] += static_cast<float>(dxh_sum[c]);
    if (Tensor* db = n.input_grad(2))
      for (int64_t c = 0; c < v.c; ++c) db->data()[c] += static_cast<float>(d_sum[c]);
    Tensor* dx = n.input_grad(0);
    // Synchronised: dx needs the sums over the whole batch (every process
    // makes this call, whether or not it needs dx, to keep the order).
    if (sync) {
      sum_over_processes(sync, d_sum);
      sum_over_processes(sync, dxh_sum);
    }
    if (!dx) return;
    // dx = α_c δ − κ_c (x − μ_c) − λ_c with α = g r, κ = α r mean(δ x̂),
    // λ = α mean(δ); in evaluation mode κ = λ = 0.
    const float inv_count = 1.0f / static_cast<float>(count);
    std::vector<float> alpha(v.c), kappa(v.c, 0.0f), lambda(v.c, 0.0f);
    for (int64_t c = 0; c < v.c; ++c) {
      alpha[c] = g[c] * r[c];
      if (training) {
        kappa[c] = alpha[c] * r[c] * static_cast<float>(dxh_sum[c]) * inv_count;
        lambda[c] = alpha[c] * static_cast<float>(d_sum[c]) * inv_count;
      }
    }
    for_each_value(v, [o = dx->data(), a, d, mu = mu.data(), al = alpha.data(), ka = kappa.data(),
                       la = lambda.data()](int64_t i, int64_t c) {
      o[i] += al[c] * d[i] - ka[c] * (a[i] - mu[c]) - la[c];
    });
  });
}

}  // namespace rg
