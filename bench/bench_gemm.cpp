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
// Usage: bench_gemm [--threads N] [--rounds K]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
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

}  // namespace

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  int threads = 1, rounds = 5;
  CLI::App app{"OpenBLAS against oneDNN on the models' matrix products", "bench_gemm"};
  app.add_option("--threads", threads, "threads")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "interleaved rounds; the median over rounds is reported")
      ->check(CLI::PositiveNumber);
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
