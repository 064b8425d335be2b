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
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "layers/normalization.h"
#include "rmsgrad.h"

using namespace rg;

namespace {

NormImpl g_impl = NormImpl::Fused;  // --norm-impl

double median_ms(int repeats, const std::function<void()>& body) {
  for (int i = 0; i < 3; ++i) body();  // warm caches and the allocator
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void report(const char* op, int64_t rows, int64_t cols, int threads, double fwd, double fwd_bwd) {
  const double bytes = 2.0 * rows * cols * sizeof(float);
  std::printf(
      "{\"op\": \"%s\", \"norm_impl\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"threads\": %d, \"fwd_ms\": %.4f, "
      "\"fwd_bwd_ms\": %.4f, \"fwd_gbps\": %.2f}\n",
      op, norm_impl_name(g_impl).c_str(), (long long)rows, (long long)cols, threads, fwd, fwd_bwd, bytes / (fwd * 1e6));
  std::fflush(stdout);
}

// Forward and forward+backward of `norm` on x, with a fresh gradient buffer
// for x every time, as for an intermediate activation.
std::pair<double, double> time_norm(Norm& norm, const Tensor& xv, const Tensor& dy, int repeats) {
  Var x(xv, true);
  const double fwd = median_ms(repeats, [&] {
    NoGradGuard no_grad;
    Var y = norm.forward(x);
  });
  const double fwd_bwd = median_ms(repeats, [&] {
    x.node()->grad = Tensor();
    for (auto& [_, p] : norm.named_parameters()) p.node()->grad = Tensor();
    Var y = norm.forward(x);
    tape().backward(y, dy);
    tape().clear();
  });
  return {fwd, fwd_bwd};
}

void conv_maps(int threads, int repeats) {
  for (const Shape& shape : {Shape{100, 48, 32, 32}, Shape{100, 96, 16, 16}, Shape{100, 96, 6, 6}}) {
    Generator gen(0);
    const Tensor xv = normal(shape, 0.0f, 1.0f, gen), dy = normal(shape, 0.0f, 1.0f, gen);
    const int64_t rows = shape[0] * shape[1], cols = shape[2] * shape[3];
    for (const char* name : {"layernorm", "rmsnorm"}) {
      NormOptions options;
      options.kind = parse_norm_kind(name);
      options.impl = g_impl;
      options.rms_bias = true;  // as ConvPool-CNN-C: a gain and a bias per channel for every norm
      auto norm = make_norm(options, shape[1], NormLayout::Channels);
      const auto [fwd, fwd_bwd] = time_norm(*norm, xv, dy, repeats);
      report(fmt::format("{}_channels", name).c_str(), rows, cols, threads, fwd, fwd_bwd);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, repeats = 30;
  bool channels = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (a == "--repeats" && i + 1 < argc)
      repeats = std::stoi(argv[++i]);
    else if (a == "--norm-impl" && i + 1 < argc)
      g_impl = parse_norm_impl(argv[++i]);
    else if (a == "--channels")
      channels = true;
    else {
      std::fprintf(stderr,
                   "bench_norms: unknown argument '%s' (usage: bench_norms [--threads N] [--repeats R] [--norm-impl "
                   "fused|composed] "
                   "[--channels])\n",
                   a.c_str());
      return 2;
    }
  }
  set_num_threads(threads);
  if (channels) {
    conv_maps(threads, repeats);
    return 0;
  }
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4000, 1024}, {2048, 512}}) {
    Generator gen(0);
    Tensor xv = normal(Shape{rows, cols}, 0.0f, 1.0f, gen);
    Tensor dy = normal(Shape{rows, cols}, 0.0f, 1.0f, gen);

    // The copy baseline: the least a forward that reads x and writes y can take.
    // Parallel like the kernels, so both use the same cores.
    double copy_ms = median_ms(repeats, [&] {
      Tensor y = Tensor::empty(xv.shape());
      float* dst = y.data();
      const float* src = xv.data();
      parallel_for(xv.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
        std::memcpy(dst + lo, src + lo, sizeof(float) * (hi - lo));
      });
    });
    report("copy", rows, cols, threads, copy_ms, 0.0);

    for (const char* name : {"layernorm", "rmsnorm", "prmsnorm", "l2norm"}) {
      NormOptions options;
      options.kind = parse_norm_kind(name);
      options.impl = g_impl;
      auto norm = make_norm(options, cols);
      const auto [fwd, fwd_bwd] = time_norm(*norm, xv, dy, repeats);
      report(name, rows, cols, threads, fwd, fwd_bwd);
    }
  }
  return 0;
}
