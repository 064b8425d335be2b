// Times conv2d forward and forward+backward on every distinct conv layer of
// ConvPool-CNN-C at batch 100 (input 3×32×32). One JSON object per line:
// {"op": "conv2d", "layer": .., "in": C, "out": O, "size": H, "kernel": k,
//  "padding": p, "batch": N, "threads": T, "fwd_ms": .., "fwd_bwd_ms": ..},
// medians of repeated runs after warm-up. bench/bench_conv_torch.py prints
// the same lines for torch.nn.functional.conv2d; bench/bench_conv.sh joins them.
//
// Usage: bench_conv [--threads N] [--repeats R] [--batch B]
#include <cstdio>

#include "bench/op_timing.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

struct ConvShape {
  const char* name;
  int64_t in, out, size, kernel, padding;
};

// The distinct conv shapes of ConvPool-CNN-C (at width 1).
const ConvShape kLayers[] = {
    {"conv1 3x3 3-96 @32", 3, 96, 32, 3, 1},        {"conv2,3 3x3 96-96 @32", 96, 96, 32, 3, 1},
    {"conv4 3x3 96-192 @16", 96, 192, 16, 3, 1},    {"conv5,6 3x3 192-192 @16", 192, 192, 16, 3, 1},
    {"conv7 3x3 192-192 @8 nopad", 192, 192, 8, 3, 0}, {"conv8,9 1x1 192-192 @6", 192, 192, 6, 1, 0},
};

}  // namespace

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  bench::OpFlags flags;
  flags.repeats = 10;
  int64_t batch = 100;
  CLI::App app{"conv2d on every distinct conv layer of ConvPool-CNN-C", "bench_conv"};
  bench::add_op_flags(app, flags, /*with_norm_impl=*/false);
  app.add_option("--batch", batch, "images")->check(CLI::PositiveNumber);
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  set_num_threads(flags.threads);
  for (const ConvShape& l : kLayers) {
    Generator gen(0);
    Var x(normal(Shape{batch, l.in, l.size, l.size}, 0.0f, 1.0f, gen), true);
    Var w(normal(Shape{l.out, l.in, l.kernel, l.kernel}, 0.0f, 0.05f, gen), true);
    Var b(Tensor::zeros(Shape{l.out}), true);
    const int64_t out_size = l.size + 2 * l.padding - l.kernel + 1;
    Tensor dy = normal(Shape{batch, l.out, out_size, out_size}, 0.0f, 1.0f, gen);
    const auto ms =
        bench::time_forward_backward([&] { return conv2d(x, w, b, 1, l.padding); }, {x, w, b}, dy, flags.repeats);
    std::printf("{\"op\": \"conv2d\", \"impl\": \"rmsgrad\", \"layer\": \"%s\", \"batch\": %lld, \"threads\": %d, "
                "\"fwd_ms\": %.3f, \"fwd_bwd_ms\": %.3f}\n",
                l.name, (long long)batch, flags.threads, ms.fwd, ms.fwd_bwd);
    std::fflush(stdout);
  }
  return 0;
}
