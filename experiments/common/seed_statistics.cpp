#include "rmsgrad/experiments/common/seed_statistics.h"

#include <cmath>
#include <limits>

namespace rg {

namespace {
constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();
}

MeanAndSpread mean_and_spread(const std::vector<double>& values) {
  MeanAndSpread s;
  double sum = 0;
  for (double v : values)
    if (!std::isnan(v)) sum += v, ++s.n;
  if (s.n == 0) return {kMissing, kMissing, 0};
  s.mean = sum / static_cast<double>(s.n);
  double squares = 0;
  for (double v : values)
    if (!std::isnan(v)) squares += (v - s.mean) * (v - s.mean);
  s.sd = s.n > 1 ? std::sqrt(squares / static_cast<double>(s.n - 1)) : kMissing;
  return s;
}

double student_t_975(int64_t df) {
  // Quantiles for df = 1..30, then a few larger ones; between those the next
  // smaller df's (slightly wider) value is used.
  static const double small[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return kMissing;
  if (df <= 30) return small[df - 1];
  if (df < 40) return 2.042;
  if (df < 60) return 2.021;
  if (df < 120) return 2.000;
  return 1.980;
}

PairedDifference paired_difference(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (!std::isnan(a[i]) && !std::isnan(b[i])) d.push_back(a[i] - b[i]);
  const MeanAndSpread s = mean_and_spread(d);
  PairedDifference p{s.mean, kMissing, kMissing, s.n};
  if (s.n >= 2) {
    const double half = student_t_975(s.n - 1) * s.sd / std::sqrt(static_cast<double>(s.n));
    p.low = s.mean - half;
    p.high = s.mean + half;
  }
  return p;
}

}  // namespace rg
