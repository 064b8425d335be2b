// Times the fused normalizations, forward and forward+backward, and a plain
// copy of the same bytes for scale. One JSON object per line:
//   {"op": "rmsnorm", "rows": 4000, "cols": 1024, "threads": 1, "fwd_ms": .., "fwd_bwd_ms": .., "fwd_gbps": ..}
// Times are medians over repeated runs. fwd_gbps counts the bytes a forward
// must move at least: read x, write y.
//
// Usage: bench_norms [--threads N] [--repeats R]
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
  std::printf("{\"op\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"threads\": %d, \"fwd_ms\": %.4f, "
              "\"fwd_bwd_ms\": %.4f, \"fwd_gbps\": %.2f}\n",
              op, (long long)rows, (long long)cols, threads, fwd, fwd_bwd, bytes / (fwd * 1e6));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, repeats = 30;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "bench_norms: unknown argument '%s' (usage: bench_norms [--threads N] [--repeats R])\n",
                   a.c_str());
      return 2;
    }
  }
  set_num_threads(threads);
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
      auto norm = make_norm(options, cols);
      Var x(xv, true);
      double fwd = median_ms(repeats, [&] {
        NoGradGuard no_grad;
        Var y = norm->forward(x);
      });
      double fwd_bwd = median_ms(repeats, [&] {
        // Fresh gradient buffers each time, as for an intermediate activation.
        x.node()->grad = Tensor();
        for (auto& [_, p] : norm->named_parameters()) p.node()->grad = Tensor();
        Var y = norm->forward(x);
        tape().backward(y, dy);
        tape().clear();
      });
      report(name, rows, cols, threads, fwd, fwd_bwd);
    }
  }
  return 0;
}
