// Times conv2d forward and forward+backward on every distinct conv layer of
// ConvPool-CNN-C at batch 100 (input 3×32×32). One JSON object per line:
// {"op": "conv2d", "layer": .., "in": C, "out": O, "size": H, "kernel": k,
//  "padding": p, "batch": N, "threads": T, "fwd_ms": .., "fwd_bwd_ms": ..},
// medians of repeated runs after warm-up. bench/bench_conv_torch.py prints
// the same lines for torch.nn.functional.conv2d; bench/bench_conv.sh joins them.
//
// Usage: bench_conv [--threads N] [--repeats R] [--batch B]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "rmsgrad.h"

using namespace rg;

namespace {

double median_ms(int repeats, const std::function<void()>& body) {
  for (int i = 0; i < 2; ++i) body();  // warm caches and the allocator
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Layer {
  const char* name;
  int64_t in, out, size, kernel, padding;
};

// The distinct conv shapes of ConvPool-CNN-C (at width 1).
const Layer kLayers[] = {
    {"conv1 3x3 3-96 @32", 3, 96, 32, 3, 1},        {"conv2,3 3x3 96-96 @32", 96, 96, 32, 3, 1},
    {"conv4 3x3 96-192 @16", 96, 192, 16, 3, 1},    {"conv5,6 3x3 192-192 @16", 192, 192, 16, 3, 1},
    {"conv7 3x3 192-192 @8 nopad", 192, 192, 8, 3, 0}, {"conv8,9 1x1 192-192 @6", 192, 192, 6, 1, 0},
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, repeats = 10;
  int64_t batch = 100;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else if (a == "--batch" && i + 1 < argc) batch = std::stoll(argv[++i]);
    else {
      std::fprintf(stderr, "bench_conv: unknown argument '%s' (usage: bench_conv [--threads N] [--repeats R] "
                           "[--batch B])\n", a.c_str());
      return 2;
    }
  }
  set_num_threads(threads);
  for (const Layer& l : kLayers) {
    Generator gen(0);
    Var x(normal(Shape{batch, l.in, l.size, l.size}, 0.0f, 1.0f, gen), true);
    Var w(normal(Shape{l.out, l.in, l.kernel, l.kernel}, 0.0f, 0.05f, gen), true);
    Var b(Tensor::zeros(Shape{l.out}), true);
    const int64_t out_size = l.size + 2 * l.padding - l.kernel + 1;
    Tensor dy = normal(Shape{batch, l.out, out_size, out_size}, 0.0f, 1.0f, gen);
    const double fwd = median_ms(repeats, [&] {
      NoGradGuard no_grad;
      Var y = conv2d(x, w, b, 1, l.padding);
    });
    const double fwd_bwd = median_ms(repeats, [&] {
      for (Var* v : {&x, &w, &b}) v->node()->grad = Tensor();  // fresh gradients, as in a training step
      Var y = conv2d(x, w, b, 1, l.padding);
      tape().backward(y, dy);
      tape().clear();
    });
    std::printf("{\"op\": \"conv2d\", \"impl\": \"rmsgrad\", \"layer\": \"%s\", \"batch\": %lld, \"threads\": %d, "
                "\"fwd_ms\": %.3f, \"fwd_bwd_ms\": %.3f}\n",
                l.name, (long long)batch, threads, fwd, fwd_bwd);
    std::fflush(stdout);
  }
  return 0;
}
