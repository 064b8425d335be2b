#pragma once
// Timing of training steps for the bench programs, in two modes.
//
// Alone: `time_steps` runs a step function a few times to warm up (the
// allocator's cache fills, OpenBLAS sizes its buffers), then times each of
// the following steps; the caller reports the median and the fastest.
//
// Paired: `time_pairs` compares two variants of a step (say the RMSNorm and
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

namespace rg::bench {

using Step = std::function<void()>;

inline double time_one_ms(const Step& step) {
  const auto start = std::chrono::steady_clock::now();
  step();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Times `steps` steps after `warmup` untimed ones; returned sorted.
inline std::vector<double> time_steps(const Step& step, int warmup, int steps) {
  for (int i = 0; i < warmup; ++i) step();
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

struct PairedTimes {
  std::vector<double> a_ms, b_ms;  // one entry per pair
};

// `warmup` untimed steps of each variant, then `pairs` timed pairs in the
// order A B, B A, A B, …
inline PairedTimes time_pairs(const Step& a, const Step& b, int warmup, int pairs) {
  for (int i = 0; i < warmup; ++i) {
    a();
    b();
  }
  PairedTimes t;
  for (int i = 0; i < pairs; ++i) {
    if (i % 2 == 0) {
      t.a_ms.push_back(time_one_ms(a));
      t.b_ms.push_back(time_one_ms(b));
    } else {
      t.b_ms.push_back(time_one_ms(b));
      t.a_ms.push_back(time_one_ms(a));
    }
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
  double a_ms = 0, b_ms = 0;        // medians of each variant's steps
  double ratio = 0;                 // median of t_A / t_B over the pairs
  double ratio_lo = 0, ratio_hi = 0;  // its 95% interval (NaN if too few pairs)
  int a_faster = 0;                 // pairs in which A's step was the shorter
};

inline RatioSummary summarize(const PairedTimes& t) {
  RatioSummary s;
  const int n = static_cast<int>(t.a_ms.size());
  std::vector<double> ratios;
  for (int i = 0; i < n; ++i) {
    ratios.push_back(t.a_ms[i] / t.b_ms[i]);
    s.a_faster += t.a_ms[i] < t.b_ms[i];
  }
  std::sort(ratios.begin(), ratios.end());
  s.a_ms = median_of(t.a_ms);
  s.b_ms = median_of(t.b_ms);
  s.ratio = median_of(ratios);
  const int j = median_interval_rank(n);
  s.ratio_lo = j > 0 ? ratios[j - 1] : NAN;
  s.ratio_hi = j > 0 ? ratios[n - j] : NAN;
  return s;
}

// One JSON line: {"impl": "rmsgrad", <fields>, "norm": A, "against": B,
// "pairs", "norm_ms", "against_ms", "ratio", "ratio_lo95", "ratio_hi95",
// "norm_faster"}. `fields` is the caller's own JSON members, comma-ended.
inline void print_pair_line(const std::string& fields, const std::string& norm, const std::string& against,
                            const PairedTimes& t) {
  const RatioSummary s = summarize(t);
  std::printf("{\"impl\": \"rmsgrad\", %s\"norm\": \"%s\", \"against\": \"%s\", \"pairs\": %zu, "
              "\"norm_ms\": %.3f, \"against_ms\": %.3f, \"ratio\": %.4f, \"ratio_lo95\": %.4f, "
              "\"ratio_hi95\": %.4f, \"norm_faster\": %d}\n",
              fields.c_str(), norm.c_str(), against.c_str(), t.a_ms.size(), s.a_ms, s.b_ms, s.ratio, s.ratio_lo,
              s.ratio_hi, s.a_faster);
}

}  // namespace rg::bench
