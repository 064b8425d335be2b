// The arithmetic peak of this machine's cores (bench/peak_flops.h): f32 FMA
// throughput at the widest vector width, at AVX2's width, and bf16
// dot-product throughput (vdpbf16ps) and AMX's tile products, at each thread count asked for.
//
//   bench_peak --threads 1 2
//
// One JSON line per thread count: threads, f32_isa, f32_gflops, avx2_gflops,
// bf16_gflops, amx_bf16_gflops (0 where the CPU lacks the instruction), and
// per thread.
#include <cstdio>
#include <vector>

#include "bench/bench_cli.h"
#include "bench/peak_flops.h"
#include "rmsgrad/core/polite_threads.h"

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  std::vector<int> threads{1, 2};
  double seconds = 0.2;
  CLI::App app{"The arithmetic peak of this machine's cores", "bench_peak"};
  app.add_option("--threads", threads, "thread counts to measure at")->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "seconds per try (three tries, best kept)")->check(CLI::PositiveNumber);
  if (int code = rg::bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  for (int t : threads) {
    const rg::bench::PeakFlops peak = rg::bench::measure_peak_flops(t, seconds);
    std::printf("{\"threads\": %d, \"f32_isa\": \"%s\", \"f32_gflops\": %.1f, \"avx2_gflops\": %.1f, "
                "\"bf16_gflops\": %.1f, \"amx_bf16_gflops\": %.1f, \"f32_gflops_per_thread\": %.1f, \"bf16_gflops_per_thread\": %.1f}\n",
                t, peak.f32_isa.c_str(), peak.f32_gflops, peak.avx2_gflops, peak.bf16_gflops, peak.amx_bf16_gflops, peak.f32_gflops / t,
                peak.bf16_gflops / t);
    std::fflush(stdout);
  }
  return 0;
}
