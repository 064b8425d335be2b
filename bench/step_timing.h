#pragma once
// Timing of training steps for the bench programs, in two modes.
//
// Alone: `time_steps` runs a step function a few times to warm up (the
// allocator's cache fills, OpenBLAS sizes its buffers), then times each of
// the following steps; the caller reports the median and the fastest.
//
// Paired: `time_rounds` compares variants of a step (say the RMSNorm and
// the LayerNorm model) built side by side in ONE process. On a shared VM the
// speed of the machine drifts by 10–30% over minutes, far more than the few
// percent two norms differ by, so timing each variant in its own run
// compares two different machines. Here the variants alternate step by step,
// in the order A B, B A, A B, … : each pair's two steps run seconds apart,
// and a drift that is linear over two pairs adds to A in one pair and to B
// in the next. The quantity reported is the median of the per-pair ratios
// t_A / t_B, with a distribution-free 95% confidence interval.
//
// Why that interval holds: if the true median ratio is ρ, each pair's ratio
// falls below ρ with probability 1/2, independently, so the number of ratios
// below ρ is Binomial(n, 1/2). Taking the j-th and (n+1−j)-th smallest
// ratios as the interval's ends, with j the largest rank for which
// P(Binomial(n, 1/2) < j) ≤ 2.5%, covers ρ with probability ≥ 95%. It needs
// no assumption about the shape of the noise; with n = 40 pairs it is
// [r_(14), r_(27)]. An interval that lies wholly below 1 says "A is faster".
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"

namespace rg::bench {

using Step = std::function<void()>;

// Every timed step first fits the thread count to the cores other processes
// leave free (core/polite_threads.h), as a driver does with
// --follow-free-cores. A step that ran on fewer threads than asked for is
// said once on stderr: its time is not the machine's speed alone.
inline int follow_free_cores() {
  static FreeCoreFollower follower;
  return follower.follow();
}

inline double time_one_ms(const Step& step) {
  static bool said = false;
  if (follow_free_cores() < requested_threads() && !said) {
    said = true;
    std::fprintf(stderr, "bench: other processes hold cores: timed steps ran on %d of the %d threads asked for\n",
                 num_threads(), requested_threads());
  }
  const auto start = std::chrono::steady_clock::now();
  step();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Times `steps` steps after `warmup` untimed ones; returned sorted.
inline std::vector<double> time_steps(const Step& step, int warmup, int steps) {
  for (int i = 0; i < warmup; ++i) {
    follow_free_cores();
    step();
  }
  std::vector<double> times;
  for (int i = 0; i < steps; ++i) times.push_back(time_one_ms(step));
  std::sort(times.begin(), times.end());
  return times;
}

inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Interleaved rounds of K variants. Every round times one step of each
// variant, in the order 0 1 … K−1 in even rounds and K−1 … 1 0 in odd ones,
// after `warmup` untimed rounds. times[v][r] is variant v's step in round r.
// With K = 2 this is the pair order A B, B A, A B, … described above; the
// ratio of two variants in the same round is one "pair".
struct RoundTimes {
  std::vector<std::vector<double>> times;
};

inline RoundTimes time_rounds(const std::vector<Step>& variants, int warmup, int rounds) {
  const size_t k = variants.size();
  for (int i = 0; i < warmup; ++i)
    for (const Step& step : variants) step();
  RoundTimes t;
  t.times.assign(k, {});
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < k; ++i) {
      const size_t v = r % 2 == 0 ? i : k - 1 - i;
      t.times[v].push_back(time_one_ms(variants[v]));
    }
  return t;
}

// The 1-based rank j of the lower end of the 95% interval for a median of n
// values (see the top of this file); 0 when n is too small for any interval.
inline int median_interval_rank(int n) {
  // P(Binomial(n, 1/2) ≤ m), accumulated term by term in doubles.
  double term = std::pow(0.5, n), cdf = 0.0;
  int j = 0;
  for (int m = 0; m < n; ++m) {
    cdf += term;  // P(X ≤ m)
    if (cdf > 0.025) break;
    j = m + 1;  // P(X < m + 1) ≤ 2.5%
    term *= static_cast<double>(n - m) / static_cast<double>(m + 1);
  }
  return j;
}

struct RatioSummary {
  double a_ms = 0, b_ms = 0;          // medians of each variant's steps
  double ratio = 0;                   // median of t_A / t_B over the pairs
  double ratio_lo = 0, ratio_hi = 0;  // its 95% interval (NaN if too few pairs)
  int a_faster = 0;                   // pairs in which A's step was the shorter
};

// A against B, from their steps of the same rounds (a[i] and b[i] a pair).
inline RatioSummary summarize(const std::vector<double>& a, const std::vector<double>& b) {
  RatioSummary s;
  const int n = static_cast<int>(a.size());
  std::vector<double> ratios;
  for (int i = 0; i < n; ++i) {
    ratios.push_back(a[i] / b[i]);
    s.a_faster += a[i] < b[i];
  }
  std::sort(ratios.begin(), ratios.end());
  s.a_ms = median_of(a);
  s.b_ms = median_of(b);
  s.ratio = median_of(ratios);
  const int j = median_interval_rank(n);
  s.ratio_lo = j > 0 ? ratios[j - 1] : NAN;
  s.ratio_hi = j > 0 ? ratios[n - j] : NAN;
  return s;
}

}  // namespace rg::bench
