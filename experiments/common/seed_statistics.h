#pragma once
// Statistics over runs that differ only in their seed: the mean and standard
// deviation of a metric per norm, and each norm against LayerNorm as a paired
// difference (the seed fixes the initial weights and the data order, so run
// s of one norm and run s of LayerNorm share everything but the norm).
//
// For n seeds with differences d_s = m_norm,s − m_LayerNorm,s, the 95%
// interval of the mean difference is d̄ ± t_{0.975, n−1} · sd(d) / √n
// (Student's t, assuming the differences are roughly normal; with 3–5 seeds
// the interval is wide, which is the honest answer). An interval that holds
// 0 says the two norms are not distinguishable with these seeds.
#include <cstdint>
#include <vector>

namespace rg {

struct MeanAndSpread {
  double mean = 0, sd = 0;  // sd is NaN for one value
  int64_t n = 0;
};
MeanAndSpread mean_and_spread(const std::vector<double>& values);  // NaNs are skipped

// t_{0.975, df}: the two-sided 95% quantile of Student's t.
double student_t_975(int64_t df);

struct PairedDifference {
  double mean = 0, low = 0, high = 0;  // low/high NaN when fewer than two pairs
  int64_t n = 0;
};
// a[i] − b[i] over the pairs where both are known (not NaN).
PairedDifference paired_difference(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace rg
