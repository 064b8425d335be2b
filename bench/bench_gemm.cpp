// Which library runs the products (core/gemm.h): OpenBLAS against oneDNN on
// the shapes the models multiply, in interleaved rounds so that whatever else
// the machine does falls on both alike. One JSON object per shape:
//   {"shape": "lm: x W1ᵀ", "op": "NT", "m": 4096, "n": 688, "k": 256, "threads": 1,
//    "openblas_gflops": .., "onednn_gflops": .., "onednn_speedup": ..,
//    "onednn_bf16_gflops": .., "bf16_speedup": ..}
// GFLOP/s from the median over rounds of each round's median call; the bf16
// column is oneDNN with bf16 inputs (core/gemm.h), their conversion from f32
// included, and bf16_speedup its speed over oneDNN's f32.
//
// With --bf16-crossing it measures instead where bf16 starts to pay on this
// CPU (core/gemm.h's bf16_min_work): oneDNN's f32 product against its bf16
// product with the threshold lifted (set_bf16_min_work(0)), both inputs
// converted at each call as an activation's are, and again with B kept in a
// Bf16WeightCache as a weight's is, on squares from 64³ to 256³ and the
// models' products nearest the default threshold. One JSON object per shape:
//   {"crossing": "160³", "op": "NN", "m": .., "n": .., "k": .., "multiply_adds": .., "threads": 1,
//    "f32_gflops": .., "bf16_gflops": .., "bf16_cached_gflops": .., "bf16_speedup": ..,
//    "bf16_cached_speedup": ..}
//
// Usage: bench_gemm [--threads N] [--rounds K] [--bf16-crossing]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "bench/op_timing.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

struct Shape3 {
  const char* what;
  bool trans_a, trans_b;
  int64_t m, n, k;
};

// The products of a training step, forward and backward (a linear layer's
// x Wᵀ, its gradients dy W and dyᵀ x), at the recipes' sizes, and the small
// ones at kOneDnnMinWork, below which OpenBLAS runs them.
const std::vector<Shape3> kShapes = {
    {"lm: x Wqᵀ (4096 tokens, d 256)", false, true, 4096, 256, 256},
    {"lm: x W1ᵀ (SwiGLU 688)", false, true, 4096, 688, 256},
    {"lm: dy W1 (d x)", false, false, 4096, 256, 688},
    {"lm: dyᵀ x (dW1)", true, false, 688, 256, 4096},
    {"lm: x W_outᵀ (77 symbols)", false, true, 4096, 77, 256},
    {"lm: attention q kᵀ (128 × 128 × 64)", false, true, 128, 128, 64},
    {"transformer: x W1ᵀ (4092 tokens, FFN 1024)", false, true, 4092, 1024, 256},
    {"transformer: logits (8000 words)", false, true, 4092, 8000, 256},
    {"rnnsearch: gates (80 × 768 × 256)", false, true, 80, 768, 256},
    {"rnnsearch: logits (80 × 8000 × 256)", false, true, 80, 8000, 256},
    {"convpool: im2col 3×3 (width 0.5)", false, false, 6400, 96, 864},
    {"square 1024", false, false, 1024, 1024, 1024},
    {"256³", false, false, 256, 256, 256},
    {"128³", false, false, 128, 128, 128},
    {"64³", false, false, 64, 64, 64},
    {"small 40³", false, false, 40, 40, 40},
    {"small 32³ (the switch)", false, false, 32, 32, 32},
};

// Around the default bf16 threshold, 2²² ≈ 161³ multiply-adds.
const std::vector<Shape3> kCrossingShapes = {
    {"64³", false, false, 64, 64, 64},
    {"96³", false, false, 96, 96, 96},
    {"128³", false, false, 128, 128, 128},
    {"144³", false, false, 144, 144, 144},
    {"160³", false, false, 160, 160, 160},
    {"192³", false, false, 192, 192, 192},
    {"224³", false, false, 224, 224, 224},
    {"256³", false, false, 256, 256, 256},
    {"rnnsearch: recurrent gates (80 × 768 × 256)", false, true, 80, 768, 256},
    {"rnnsearch: attention query (80 × 512 × 256)", false, true, 80, 512, 256},
    {"rnnsearch: dW of a step (256 × 256 × 80)", true, false, 256, 256, 80},
    {"rnnsearch: 80 × 256 × 256", false, true, 80, 256, 256},
    {"rnnsearch: 40 × 256 × 256 (2 threads' half)", false, true, 40, 256, 256},
    {"transformer: attention q kᵀ (22 × 22 × 64)", false, true, 22, 22, 64},
    {"lm: attention q kᵀ (128 × 128 × 64)", false, true, 128, 128, 64},
};

// Milliseconds per call: the median of `calls` timed calls.
double call_ms(const Shape3& s, const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c,
               int calls) {
  std::vector<double> ms;
  for (int i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, a.data(), b.data(), 0.0f, c.data());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return bench::median_of(ms);
}

// --bf16-crossing (see the top of this file).
void print_bf16_crossing(int threads, int rounds) {
  set_gemm_library(GemmLibrary::OneDNN);
  set_bf16_min_work(0);
  Generator gen(0);
  for (const Shape3& s : kCrossingShapes) {
    const Tensor a = normal(Shape{s.m * s.k}, 0.0f, 1.0f, gen), b = normal(Shape{s.k * s.n}, 0.0f, 1.0f, gen);
    std::vector<float> av(a.data(), a.data() + a.numel()), bv(b.data(), b.data() + b.numel());
    std::vector<float> c(static_cast<size_t>(s.m * s.n));
    const double gflop = 2e-9 * static_cast<double>(s.m * s.n * s.k);
    const int calls = std::clamp(static_cast<int>(0.1 / gflop), 3, 20000);
    std::vector<double> f32, bf16, cached;
    for (int round = 0; round < rounds; ++round)
      for (std::vector<double>* times : {&f32, &bf16, &cached}) {
        set_product_precision(times == &f32 ? Precision::F32 : Precision::BF16);
        std::unique_ptr<Bf16WeightCache> cache;
        if (times == &cached) cache = std::make_unique<Bf16WeightCache>(std::vector<std::span<const float>>{bv});
        call_ms(s, av, bv, c, 2);
        times->push_back(call_ms(s, av, bv, c, calls));
      }
    set_product_precision(Precision::F32);
    const double f32_gflops = gflop / (1e-3 * bench::median_of(f32));
    const double bf16_gflops = gflop / (1e-3 * bench::median_of(bf16));
    const double cached_gflops = gflop / (1e-3 * bench::median_of(cached));
    std::printf("{\"crossing\": \"%s\", \"op\": \"%c%c\", \"m\": %lld, \"n\": %lld, \"k\": %lld, "
                "\"multiply_adds\": %lld, \"threads\": %d, \"f32_gflops\": %.1f, \"bf16_gflops\": %.1f, "
                "\"bf16_cached_gflops\": %.1f, \"bf16_speedup\": %.2f, \"bf16_cached_speedup\": %.2f}\n",
                s.what, s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), static_cast<long long>(s.m * s.n * s.k),
                threads, f32_gflops, bf16_gflops, cached_gflops, bf16_gflops / f32_gflops,
                cached_gflops / f32_gflops);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  int threads = 1, rounds = 5;
  bool bf16_crossing = false;
  CLI::App app{"OpenBLAS against oneDNN on the models' matrix products", "bench_gemm"};
  app.add_option("--threads", threads, "threads")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "interleaved rounds; the median over rounds is reported")
      ->check(CLI::PositiveNumber);
  app.add_flag("--bf16-crossing", bf16_crossing, "measure where bf16 products start to pay instead (needs bf16 kernels)");
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  if (!onednn_available()) {
    std::fprintf(stderr, "bench_gemm: this build has no oneDNN (install libdnnl-dev and configure again)\n");
    return 1;
  }
  set_num_threads(threads);
  try {
    gemm_library();  // a bad RG_GEMM is said here, once
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gemm: %s\n", e.what());
    return 1;
  }
  const bool with_bf16 = bf16_products_supported();
  if (bf16_crossing) {
    if (!with_bf16) {
      std::fprintf(stderr, "bench_gemm: --bf16-crossing: oneDNN has no bf16 kernels for this CPU\n");
      return 1;
    }
    print_bf16_crossing(threads, rounds);
    return 0;
  }
  if (!with_bf16) std::fprintf(stderr, "bench_gemm: oneDNN has no bf16 kernels for this CPU; the bf16 fields are null\n");
  Generator gen(0);
  for (const Shape3& s : kShapes) {
    const Tensor a = normal(Shape{s.m * s.k}, 0.0f, 1.0f, gen), b = normal(Shape{s.k * s.n}, 0.0f, 1.0f, gen);
    std::vector<float> av(a.data(), a.data() + a.numel()), bv(b.data(), b.data() + b.numel());
    std::vector<float> c(static_cast<size_t>(s.m * s.n));
    const double gflop = 2e-9 * static_cast<double>(s.m * s.n * s.k);
    const int calls = std::clamp(static_cast<int>(0.2 / gflop), 3, 2000);  // ~0.2 GFLOP per library per round
    std::vector<double> blas, dnnl, bf16;
    for (int round = 0; round < rounds; ++round)
      for (std::vector<double>* times : {&blas, &dnnl, &bf16}) {
        if (times == &bf16 && !with_bf16) continue;
        set_product_precision(Precision::F32);
        set_gemm_library(times == &blas ? GemmLibrary::OpenBLAS : GemmLibrary::OneDNN);
        if (times == &bf16) set_product_precision(Precision::BF16);
        call_ms(s, av, bv, c, 2);  // warm: packing buffers, oneDNN's kernels generated
        times->push_back(call_ms(s, av, bv, c, calls));
      }
    set_product_precision(Precision::F32);
    const double blas_gflops = gflop / (1e-3 * bench::median_of(blas));
    const double dnnl_gflops = gflop / (1e-3 * bench::median_of(dnnl));
    const double bf16_gflops = with_bf16 ? gflop / (1e-3 * bench::median_of(bf16)) : 0.0;
    char bf16_fields[96] = "\"onednn_bf16_gflops\": null, \"bf16_speedup\": null";
    if (with_bf16)
      std::snprintf(bf16_fields, sizeof bf16_fields, "\"onednn_bf16_gflops\": %.1f, \"bf16_speedup\": %.2f", bf16_gflops,
                    bf16_gflops / dnnl_gflops);
    std::printf("{\"shape\": \"%s\", \"op\": \"%c%c\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"threads\": %d, "
                "\"openblas_gflops\": %.1f, \"onednn_gflops\": %.1f, \"onednn_speedup\": %.2f, %s}\n",
                s.what, s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), threads, blas_gflops, dnnl_gflops,
                dnnl_gflops / blas_gflops, bf16_fields);
    std::fflush(stdout);
  }
  return 0;
}
