#include "rmsgrad/core/random.h"

#include <algorithm>
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

namespace {

thread_local BatchShard t_shard;

// Where each element of a fill finds its draw. Element j lies in segment
// j / size, at position j % size, and takes the draw (per element)
//   first + segment · stride + offset + position.
// Without a shard there is one segment, the whole tensor, and element j
// takes draw first + j. With a shard of rows [r, r + L) of G along the batch
// axis, a segment is one index of the axes before it (L · inner elements),
// stride = G · inner and offset = r · inner: the draws of those rows in a
// fill of the whole batch, which reserves G · inner per segment.
struct DrawLayout {
  int64_t size = 0, stride = 0, offset = 0;
  uint64_t first = 0;

  DrawLayout(const Shape& shape, int batch_axis, Generator& gen, uint64_t draws_per_element) {
    const BatchShard& shard = t_shard;
    const int64_t numel = shape.numel();
    if (!shard.active()) {
      size = stride = std::max<int64_t>(numel, 1);
      first = gen.reserve(draws_per_element * static_cast<uint64_t>(numel));
      return;
    }
    check(batch_axis >= 0 && batch_axis < shape.rank(), "random fill: batch axis {} of shape {}", batch_axis, shape);
    check(shape[batch_axis] == shard.rows,
          "random fill: axis {} of shape {} should hold this process's {} rows of the batch", batch_axis, shape,
          shard.rows);
    int64_t inner = 1, outer = 1;
    for (int a = 0; a < batch_axis; ++a) outer *= shape[a];
    for (int a = batch_axis + 1; a < shape.rank(); ++a) inner *= shape[a];
    size = std::max<int64_t>(shard.rows * inner, 1);
    stride = shard.global_rows * inner;
    offset = shard.first * inner;
    first = gen.reserve(draws_per_element * static_cast<uint64_t>(outer * stride));
  }

  // Calls fill(j, draw) for j in [a, b), draw being element j's draw index
  // (per element; a fill using k draws per element takes k · draw onwards).
  template <class Fill>
  void for_range(int64_t a, int64_t b, Fill&& fill) const {
    for (int64_t j = a; j < b;) {
      const int64_t segment = j / size, end = std::min(b, (segment + 1) * size);
      const int64_t shift = segment * stride + offset - segment * size;  // draw − j within this segment
      for (; j < end; ++j) fill(j, static_cast<uint64_t>(j + shift));
    }
  }
};

}  // namespace

const BatchShard& batch_shard() { return t_shard; }

ScopedBatchShard::ScopedBatchShard(int64_t global_rows, int64_t first, int64_t rows) : previous_(t_shard) {
  check(global_rows > 0 && first >= 0 && rows >= 0 && first + rows <= global_rows,
        "ScopedBatchShard: rows [{}, {}) are not inside a batch of {}", first, first + rows, global_rows);
  t_shard = BatchShard{global_rows, first, rows};
}

ScopedBatchShard::~ScopedBatchShard() { t_shard = previous_; }

Tensor normal(const Shape& shape, float mean, float stddev, Generator& gen) {
  return normal(shape, mean, stddev, gen, 0);
}

Tensor normal(const Shape& shape, float mean, float stddev, Generator& gen, int batch_axis) {
  Tensor t = Tensor::empty(shape);
  float* p = t.data();
  const DrawLayout layout(shape, batch_axis, gen, 2);
  const uint64_t first = layout.first;
  parallel_for(t.numel(), kGrainHeavy, [&](int64_t a, int64_t b) {
    layout.for_range(a, b, [&](int64_t i, uint64_t draw) {
      p[i] = mean + stddev * box_muller(gen.bits_at(first + 2 * draw), gen.bits_at(first + 2 * draw + 1));
    });
  });
  return t;
}

namespace {

// Element i is dropped when its draw's uniform float is below p, i.e. when
// the draw's top 24 bits, an integer v, satisfy v < p · 2^24, i.e.
// v < ceil(p · 2^24): compared as integers, so the loops vectorise.
// store(i, kept) is called once for every element, from several threads.
template <class Store>
void draw_dropout(const Shape& shape, float p, Generator& gen, int batch_axis, Store store) {
  check(p >= 0.0f && p < 1.0f, "dropout: probability must be in [0, 1), got {}", p);
  const uint32_t threshold = static_cast<uint32_t>(std::ceil(static_cast<double>(p) * 16777216.0));
  const DrawLayout layout(shape, batch_axis, gen, 1);
  const uint64_t first = layout.first, seed = gen.seed();
  parallel_for(shape.numel(), kGrainElementwise, [&layout, &store, threshold, first, seed](int64_t a, int64_t b) {
    // Local copies: a byte store may alias anything reached through a
    // pointer (the captures among them), which kept the loop scalar.
    const Generator draws(seed);
    const uint64_t first_draw = first;
    const uint32_t dropped_below = threshold;
    Store local_store = store;
    layout.for_range(a, b, [&](int64_t i, uint64_t draw) {
      local_store(i, static_cast<uint32_t>(draws.bits_at(first_draw + draw) >> 40) >= dropped_below);
    });
  });
}

}  // namespace

Tensor dropout_mask(const Shape& shape, float p, Generator& gen, int batch_axis) {
  Tensor t = Tensor::empty(shape);
  float* m = t.data();
  const float keep_scale = 1.0f / (1.0f - p);
  draw_dropout(shape, p, gen, batch_axis,
               [m, keep_scale](int64_t i, bool kept) { m[i] = branchless_select(kept, keep_scale, 0.0f); });
  return t;
}

void dropout_apply(const Shape& shape, float p, Generator& gen, int batch_axis, const float* x, float* y,
                   uint8_t* keep) {
  const float keep_scale = 1.0f / (1.0f - p);
  draw_dropout(shape, p, gen, batch_axis, [x, y, keep, keep_scale](int64_t i, bool kept) {
    y[i] = x[i] * branchless_select(kept, keep_scale, 0.0f);
    keep[i] = kept;
  });
}

void relu_dropout_apply(const Shape& shape, float p, Generator& gen, int batch_axis, const float* x, float* y) {
  const float keep_scale = 1.0f / (1.0f - p);
  draw_dropout(shape, p, gen, batch_axis, [x, y, keep_scale](int64_t i, bool kept) {
    y[i] = branchless_select(x[i] < 0.0f, 0.0f, x[i]) * branchless_select(kept, keep_scale, 0.0f);
  });
}

}  // namespace rg
