#include "rmsgrad/core/random.h"

#include <cmath>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Box–Muller: two uniforms in (0, 1] and [0, 1) give one standard normal.
// (The second normal of the pair is dropped so that draw j maps to normal j.)
float box_muller(uint64_t bits_a, uint64_t bits_b) {
  double u1 = (static_cast<double>(bits_a >> 11) + 1.0) * (1.0 / 9007199254740992.0);  // (0, 1]
  double u2 = static_cast<double>(bits_b >> 11) * (1.0 / 9007199254740992.0);          // [0, 1)
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}
}  // namespace

uint64_t Generator::bits_at(uint64_t index) const { return splitmix64(seed_ + (index + 1) * kGolden); }

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
  float keep_scale = 1.0f / (1.0f - p);
  uint64_t first = gen.reserve(t.numel());
  parallel_for(t.numel(), kGrainHeavy, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) m[i] = bits_to_uniform(gen.bits_at(first + i)) < p ? 0.0f : keep_scale;
  });
  return t;
}

}  // namespace rg
