// The vectorisable exp, sigmoid and tanh of core/fast_math.h against the C
// library, in double, over their whole useful range: the accuracy the header
// promises (exp within 2 ulp on [−87, 88]; sigmoid and tanh within 3e-7
// absolute), including at the points where the rounding of n = x·log2 e
// switches (x near (k + 1/2)·ln 2) and the tanh polynomial hands over.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "rmsgrad/core/fast_math.h"

using namespace rg;

namespace {

// The distance in units in the last place between a float and the exact value.
double ulps(float got, double exact) {
  const float rounded = static_cast<float>(exact);
  const double ulp = std::nextafter(std::fabs(rounded), INFINITY) - std::fabs(rounded);
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

std::vector<float> sample_points(float lo, float hi, int count) {
  std::vector<float> xs;
  for (int i = 0; i <= count; ++i) xs.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(count));
  for (int k = -125; k <= 127; ++k) {  // around the switches of n
    const float half = static_cast<float>((k + 0.5) * std::log(2.0));
    for (float x = std::nextafter(half, -INFINITY), j = 0; j < 3; ++j, x = std::nextafter(x, INFINITY))
      if (x > lo && x < hi) xs.push_back(x);
  }
  for (float x : {0.0f, -0.0f, 0.625f, -0.625f, std::nextafter(0.625f, 0.0f), 1e-30f, -1e-30f}) xs.push_back(x);
  return xs;
}

}  // namespace

TEST_CASE("fast_exp is within 2 ulp of exp on [-87, 88]") {
  double worst = 0.0;
  float worst_x = 0.0f;
  for (float x : sample_points(-87.0f, 88.0f, 2000000)) {
    const double e = ulps(fast_exp(x), std::exp(static_cast<double>(x)));
    if (e > worst) worst = e, worst_x = x;
  }
  CAPTURE(worst_x);
  CHECK(worst <= 2.0);
  CHECK(fast_exp(-200.0f) >= 0.0f);  // clamped: tiny, never negative or NaN
  CHECK(fast_exp(200.0f) == INFINITY);  // as exp: beyond float range
}

TEST_CASE("fast_sigmoid and fast_tanh are within 3e-7 of the exact values") {
  double worst_sigmoid = 0.0, worst_tanh = 0.0;
  for (float x : sample_points(-40.0f, 40.0f, 2000000)) {
    const double xd = x;
    worst_sigmoid = std::max(worst_sigmoid, std::fabs(fast_sigmoid(x) - 1.0 / (1.0 + std::exp(-xd))));
    worst_tanh = std::max(worst_tanh, std::fabs(fast_tanh(x) - std::tanh(xd)));
  }
  CHECK(worst_sigmoid <= 3e-7);
  CHECK(worst_tanh <= 3e-7);
  CHECK(fast_tanh(-0.0f) == 0.0f);
  CHECK(fast_tanh(50.0f) == 1.0f);
  CHECK(fast_sigmoid(-100.0f) >= 0.0f);
}
