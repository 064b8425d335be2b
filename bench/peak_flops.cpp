#include "bench/peak_flops.h"

#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace rg::bench {

namespace {

__attribute__((target("avx512f"))) float sum_lanes(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float sum = 0;
  for (float x : lanes) sum += x;
  return sum;
}

// Each kernel runs `iterations` rounds of its chains and returns a sum of the
// accumulators, so the compiler cannot drop the work.

__attribute__((target("avx512f"))) float fma_avx512(int64_t iterations) {
  constexpr int kChains = 16;
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001f * c);
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
  return sum_lanes(total);
}

__attribute__((target("avx2,fma"))) float fma_avx2(int64_t iterations) {
  constexpr int kChains = 12;
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.001f * c);
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-4f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm256_add_ps(total, acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, total);
  float sum = 0;
  for (float x : lanes) sum += x;
  return sum;
}

float fma_scalar(int64_t iterations) {
  constexpr int kChains = 8;
  float acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = 0.001f * c;
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * 0.999f + 1e-4f;
  float sum = 0;
  for (float x : acc) sum += x;
  return sum;
}

__attribute__((target("avx512f,avx512bf16"))) float dot_bf16(int64_t iterations) {
  constexpr int kChains = 24;
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001f * c);
  // 32 bf16 numbers each; the accumulators grow by 2·1e-6 a step and stay far from overflow.
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
  return sum_lanes(total);
}

// AMX: eight tile registers of up to 16 rows × 64 bytes. tdpbf16ps multiplies
// a 16 × 32 bf16 tile by a 32 × 16 one (stored as pairs) into a 16 × 16 f32
// tile: 16·16·32·2 = 16,384 FLOPs per instruction. Four accumulator tiles
// (0–3) take turns so that no instruction waits for the previous one's result.
// Linux hands a process the tile registers' state only on request.
bool request_amx() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-bf16"))) float amx_bf16(int64_t iterations) {
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.bytes_per_row[t] = 64, config.rows[t] = 16;
  _tile_loadconfig(&config);
  alignas(64) static thread_local uint16_t operand[16 * 32];
  for (uint16_t& x : operand) x = 0x3a83;  // bf16 ≈ 1e-3
  alignas(64) static thread_local float out[16 * 16] = {};
  _tile_zero(0);  // the tile intrinsics take register numbers as literals
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
}

volatile float sink;

// FLOPs per iteration of each kernel: chains × lanes × FLOPs per lane.
constexpr double kFlopsAvx512 = 16 * 16 * 2, kFlopsAvx2 = 12 * 8 * 2, kFlopsScalar = 8 * 2,
                 kFlopsBf16 = 24 * 16 * 4,
                 kFlopsAmx = 4 * 16 * 16 * 32 * 2;

// GFLOP/s of `kernel` on `threads` threads: iterations sized to ~`seconds`
// from a short calibration run, the best of three tries.
double measure(float (*kernel)(int64_t), double flops_per_iteration, int threads, double seconds) {
  std::vector<float> results(threads);
  auto run = [&](int64_t iterations) {
    const double start = omp_get_wtime();
#pragma omp parallel num_threads(threads)
    results[omp_get_thread_num()] = kernel(iterations);
    float sum = 0;
    for (float r : results) sum += r;
    sink = sum;  // kept, so that no kernel's work can be dropped
    return omp_get_wtime() - start;
  };
  int64_t iterations = 1 << 16;
  for (double t = run(iterations); t < 0.02; t = run(iterations)) iterations *= 4;
  iterations = static_cast<int64_t>(iterations * seconds / std::max(run(iterations), 1e-6));
  double best = 0;
  for (int i = 0; i < 3; ++i) best = std::max(best, threads * iterations * flops_per_iteration / run(iterations) / 1e9);
  return best;
}

}  // namespace

PeakFlops measure_peak_flops(int threads, double seconds_per_try) {
  PeakFlops peak;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    peak.f32_isa = "avx512";
    peak.f32_gflops = measure(fma_avx512, kFlopsAvx512, threads, seconds_per_try);
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    peak.f32_isa = "avx2";
    peak.f32_gflops = measure(fma_avx2, kFlopsAvx2, threads, seconds_per_try);
  } else {
    peak.f32_isa = "scalar";
    peak.f32_gflops = measure(fma_scalar, kFlopsScalar, threads, seconds_per_try);
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    peak.avx2_gflops = peak.f32_isa == "avx2" ? peak.f32_gflops : measure(fma_avx2, kFlopsAvx2, threads, seconds_per_try);
  if (__builtin_cpu_supports("avx512bf16"))
    peak.bf16_gflops = measure(dot_bf16, kFlopsBf16, threads, seconds_per_try);
  if (__builtin_cpu_supports("amx-bf16") && request_amx())
    peak.amx_bf16_gflops = measure(amx_bf16, kFlopsAmx, threads, seconds_per_try);
  return peak;
}

}  // namespace rg::bench
