// Times the normalizations (fused, or composed from ops with --norm-impl
// composed), forward and forward+backward, and a plain
// copy of the same bytes for scale. One JSON object per line:
//   {"op": "rmsnorm", "rows": 4000, "cols": 1024, "threads": 1, "fwd_ms": .., "fwd_bwd_ms": .., "fwd_gbps": ..}
// Times are medians over repeated runs. fwd_gbps counts the bytes a forward
// must move at least: read x, write y.
//
// --channels times the conv-map layout instead: LayerNorm and RMSNorm with a
// gain and a bias per channel over each H×W map, on ConvPool-CNN-C's maps at
// width 0.5 and batch 100 ([100, 48, 32, 32], [100, 96, 16, 16], [100, 96, 6, 6]);
// "rows" is N·C and "cols" H·W there.
//
// Usage: bench_norms [--threads N] [--repeats R] [--norm-impl fused|composed] [--channels]
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench/op_timing.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

void report(const bench::OpFlags& flags, const char* op, int64_t rows, int64_t cols, double fwd, double fwd_bwd) {
  const double bytes = 2.0 * rows * cols * sizeof(float);
  std::printf(
      "{\"op\": \"%s\", \"norm_impl\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"threads\": %d, \"fwd_ms\": %.4f, "
      "\"fwd_bwd_ms\": %.4f, \"fwd_gbps\": %.2f}\n",
      op, flags.norm_impl.c_str(), (long long)rows, (long long)cols, flags.threads, fwd, fwd_bwd, bytes / (fwd * 1e6));
  std::fflush(stdout);
}

// Forward and forward+backward of `norm` on x; x's gradient is fresh every
// time, as for an intermediate activation.
bench::ForwardBackwardMs time_norm(Norm& norm, const Tensor& xv, const Tensor& dy, int repeats) {
  Var x(xv, true);
  std::vector<Var> inputs{x};
  for (const auto& [name, p] : norm.named_parameters()) inputs.push_back(p);
  return bench::time_forward_backward([&] { return norm.forward(x); }, inputs, dy, repeats);
}

void conv_maps(const bench::OpFlags& flags) {
  for (const Shape& shape : {Shape{100, 48, 32, 32}, Shape{100, 96, 16, 16}, Shape{100, 96, 6, 6}}) {
    Generator gen(0);
    const Tensor xv = normal(shape, 0.0f, 1.0f, gen), dy = normal(shape, 0.0f, 1.0f, gen);
    const int64_t rows = shape[0] * shape[1], cols = shape[2] * shape[3];
    for (const char* name : {"layernorm", "rmsnorm"}) {
      NormOptions options;
      options.kind = parse_norm_kind(name);
      options.impl = flags.impl();
      options.rms_bias = true;  // as ConvPool-CNN-C: a gain and a bias per channel for every norm
      auto norm = make_norm(options, shape[1], NormLayout::Channels);
      const auto ms = time_norm(*norm, xv, dy, flags.repeats);
      report(flags, fmt::format("{}_channels", name).c_str(), rows, cols, ms.fwd, ms.fwd_bwd);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  bench::OpFlags flags;
  bool channels = false;
  CLI::App app{"the normalizations alone, and a copy of the same bytes", "bench_norms"};
  bench::add_op_flags(app, flags);
  app.add_flag("--channels", channels, "the conv-map layout, on ConvPool-CNN-C's maps");
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  set_num_threads(flags.threads);
  if (channels) {
    conv_maps(flags);
    return 0;
  }
  // (64 × 960 and 64 × 240: the attentive reader's LSTM gates and states, one time step.)
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4000, 1024}, {2048, 512}, {64, 960}, {64, 240}}) {
    Generator gen(0);
    Tensor xv = normal(Shape{rows, cols}, 0.0f, 1.0f, gen);
    Tensor dy = normal(Shape{rows, cols}, 0.0f, 1.0f, gen);

    // The copy baseline: the least a forward that reads x and writes y can take.
    // Parallel like the kernels, so both use the same cores.
    const double copy_ms = bench::median_ms(flags.repeats, [&] {
      Tensor y = Tensor::empty(xv.shape());
      float* dst = y.data();
      const float* src = xv.data();
      parallel_for(xv.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
        std::memcpy(dst + lo, src + lo, sizeof(float) * (hi - lo));
      });
    });
    report(flags, "copy", rows, cols, copy_ms, 0.0);

    for (const char* name : {"layernorm", "rmsnorm", "prmsnorm", "l2norm"}) {
      NormOptions options;
      options.kind = parse_norm_kind(name);
      options.impl = flags.impl();
      auto norm = make_norm(options, cols);
      const auto ms = time_norm(*norm, xv, dy, flags.repeats);
      report(flags, name, rows, cols, ms.fwd, ms.fwd_bwd);
    }
  }
  return 0;
}
