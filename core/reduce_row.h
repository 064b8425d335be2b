#pragma once
// Row reductions that vectorise. A float sum in one accumulator cannot be
// vectorised without reassociating it, and GCC's `omp simd reduction` keeps
// its lanes in memory; 16 independent accumulators, added at the end, give
// the compiler exactly the SIMD lanes it needs (AVX-512: one register; AVX2:
// two). The result differs from a serial sum only by rounding order, and is
// the same for every thread count.
#include <algorithm>
#include <cmath>
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

// max_i f(i) over [0, n) (−∞ when n = 0), lane by lane. Unlike a sum, the
// result does not depend on the order. GCC 12 keeps a float max in a branch
// (a NaN must not be reordered) unless told the lanes are independent, which
// `omp simd` does: then one vmaxps per 16 values.
template <class F>
inline float lane_max(int64_t n, F f) {
  float acc[kLanes];
  for (float& a : acc) a = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
#pragma omp simd
    for (int j = 0; j < kLanes; ++j) acc[j] = std::max(acc[j], f(i + j));
  float top = -INFINITY;
  for (; i < n; ++i) top = std::max(top, f(i));
  for (int j = 0; j < kLanes; ++j) top = std::max(top, acc[j]);
  return top;
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
