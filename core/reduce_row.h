#pragma once
// Row reductions that vectorise. A float sum in one accumulator cannot be
// vectorised without reassociating it, and GCC's `omp simd reduction` keeps
// its lanes in memory; 16 independent accumulators, added at the end, give
// the compiler exactly the SIMD lanes it needs (AVX-512: one register; AVX2:
// two). The result differs from a serial sum only by rounding order, and is
// the same for every thread count.
#include <cstdint>

namespace rg {

inline constexpr int kLanes = 16;

// Σ_i f(i) over [0, n), f evaluated lane by lane.
template <class F>
inline float lane_sum(int64_t n, F f) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += f(i + j);
  float tail = 0.0f;
  for (; i < n; ++i) tail += f(i);
  float total = 0.0f;
  for (int j = 0; j < kLanes; ++j) total += acc[j];
  return total + tail;
}

inline float sum_of(const float* a, int64_t n) {
  return lane_sum(n, [a](int64_t i) { return a[i]; });
}
inline float sum_of_squares(const float* a, int64_t n) {
  return lane_sum(n, [a](int64_t i) { return a[i] * a[i]; });
}
inline float dot(const float* a, const float* b, int64_t n) {
  return lane_sum(n, [a, b](int64_t i) { return a[i] * b[i]; });
}
inline float dot3(const float* a, const float* b, const float* c, int64_t n) {
  return lane_sum(n, [a, b, c](int64_t i) { return a[i] * b[i] * c[i]; });
}

}  // namespace rg
