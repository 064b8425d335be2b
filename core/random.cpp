#include "rmsgrad/core/random.h"

#include <cmath>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/fast_math.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

// Box–Muller: two uniforms in (0, 1] and [0, 1) give one standard normal.
// (The second normal of the pair is dropped so that draw j maps to normal j.)
float box_muller(uint64_t bits_a, uint64_t bits_b) {
  double u1 = (static_cast<double>(bits_a >> 11) + 1.0) * (1.0 / 9007199254740992.0);  // (0, 1]
  double u2 = static_cast<double>(bits_b >> 11) * (1.0 / 9007199254740992.0);          // [0, 1)
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}
}  // namespace

uint64_t Generator::reserve(uint64_t count) {
  uint64_t first = offset_;
  offset_ += count;
  return first;
}

uint64_t Generator::next_u64() { return bits_at(offset_++); }

float Generator::uniform() { return bits_to_uniform(next_u64()); }

float Generator::uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }

float Generator::normal(float mean, float stddev) {
  uint64_t first = reserve(2);
  return mean + stddev * box_muller(bits_at(first), bits_at(first + 1));
}

int64_t Generator::randint(int64_t n) {
  check(n > 0, "Generator::randint: need n > 0, got {}", n);
  // Rejection sampling removes the modulo bias.
  uint64_t un = static_cast<uint64_t>(n);
  uint64_t limit = UINT64_MAX - UINT64_MAX % un;
  uint64_t r;
  do r = next_u64();
  while (r >= limit);
  return static_cast<int64_t>(r % un);
}

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) { default_generator().set_state(seed, 0); }

Tensor uniform(const Shape& shape, float lo, float hi, Generator& gen) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data();
  uint64_t first = gen.reserve(t.numel());
  parallel_for(t.numel(), kGrainHeavy, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) p[i] = lo + (hi - lo) * bits_to_uniform(gen.bits_at(first + i));
  });
  return t;
}

Tensor normal(const Shape& shape, float mean, float stddev, Generator& gen) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data();
  uint64_t first = gen.reserve(2 * t.numel());
  parallel_for(t.numel(), kGrainHeavy, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i)
      p[i] = mean + stddev * box_muller(gen.bits_at(first + 2 * i), gen.bits_at(first + 2 * i + 1));
  });
  return t;
}

Tensor dropout_mask(const Shape& shape, float p, Generator& gen) {
  check(p >= 0.0f && p < 1.0f, "dropout: probability must be in [0, 1), got {}", p);
  Tensor t = Tensor::empty(shape);
  float* m = t.data();
  const float keep_scale = 1.0f / (1.0f - p);
  // Dropped when bits_to_uniform(b) < p, i.e. when the top 24 bits, an
  // integer v, satisfy v < p · 2^24, i.e. v < ceil(p · 2^24): compared as
  // integers, so the loop vectorises and the masks are the same.
  const uint32_t threshold = static_cast<uint32_t>(std::ceil(static_cast<double>(p) * 16777216.0));
  const uint64_t first = gen.reserve(t.numel());
  const uint64_t seed = gen.seed();
  parallel_for(t.numel(), kGrainElementwise, [m, keep_scale, threshold, first, seed](int64_t a, int64_t b) {
    const Generator draws(seed);
    for (int64_t i = a; i < b; ++i) {
      const auto top24 = static_cast<uint32_t>(draws.bits_at(first + static_cast<uint64_t>(i)) >> 40);
      m[i] = branchless_select(top24 < threshold, 0.0f, keep_scale);
    }
  });
  return t;
}

}  // namespace rg
