#pragma once
// A seeded random generator that gives the same numbers on every platform,
// compiler and thread count.
//
// It is counter-based: draw number i of a generator with seed s is
// splitmix64(s + (i + 1) · φ), where φ = 0x9E3779B97F4A7C15 and splitmix64 is
// Vigna's 64-bit finaliser. Because any draw can be computed from (seed, i)
// alone, a tensor can be filled in parallel and still get exactly the numbers
// a serial loop would, and the whole state is two integers (easy to save).
//
// Uniform floats use the top 24 bits of a draw, so they are exact multiples of
// 2^-24 in [0, 1). Normals use Box–Muller in double precision, rounded to
// float; std::log/std::cos/std::sin of glibc and other mainstream libms agree
// to within an ulp of double, far below float resolution.
#include <cstdint>

#include "rmsgrad/core/tensor.h"

namespace rg {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}

  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }  // draws used so far
  void set_state(uint64_t seed, uint64_t offset) { seed_ = seed, offset_ = offset; }

  uint64_t next_u64();                 // one raw 64-bit draw
  float uniform();                     // [0, 1)
  float uniform(float lo, float hi);   // [lo, hi)
  float normal(float mean = 0.0f, float stddev = 1.0f);
  int64_t randint(int64_t n);          // [0, n), n > 0; unbiased

  // Reserves `count` draws and returns the offset of the first; draw j of the
  // block is then bits_at(first + j). This is what parallel fills use.
  uint64_t reserve(uint64_t count);
  // Inline, so that a fill's loop over draws can be vectorised.
  uint64_t bits_at(uint64_t index) const {
    uint64_t z = seed_ + (index + 1) * 0x9E3779B97F4A7C15ull;  // s + (i + 1) · φ, then splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t seed_ = 0;
  uint64_t offset_ = 0;
};

// Data-parallel training splits each batch over processes. For the result not
// to depend on how many there are, a random draw must belong to an example,
// not to a process: a process that holds rows [first, first + rows) of a
// global batch of `global_rows` draws, for its elements, exactly the numbers a
// single process would draw for those rows of the whole batch, and advances
// the generator as far as that single process would. A fill is told which
// axis of its shape is the batch (0 for [B, ...], 1 for time-major [T, B, ...]).
//
// The shard is set for the duration of a step by whoever splits the batch
// (ScopedBatchShard); without one every fill is the whole batch, as before.
struct BatchShard {
  int64_t global_rows = 0;  // 0: no shard, the batch is whole
  int64_t first = 0;
  int64_t rows = 0;
  bool active() const { return global_rows > 0; }
};
const BatchShard& batch_shard();  // this thread's

class ScopedBatchShard {
 public:
  ScopedBatchShard(int64_t global_rows, int64_t first, int64_t rows);
  ~ScopedBatchShard();
  ScopedBatchShard(const ScopedBatchShard&) = delete;
  ScopedBatchShard& operator=(const ScopedBatchShard&) = delete;

 private:
  BatchShard previous_;
};

// Fill new tensors.
// The generator layers draw their initial weights from when none is given:
// one per process, seeded 0 (manual_seed changes that). Pass a Generator of
// your own to make initialisation independent of construction order.
Generator& default_generator();
void manual_seed(uint64_t seed);

Tensor uniform(const Shape& shape, float lo, float hi, Generator& gen);
Tensor normal(const Shape& shape, float mean, float stddev, Generator& gen);
// Per-example noise, following the batch shard (above): `batch_axis` is the
// shape's batch axis. Without a shard these are the two fills below and
// above, draw for draw.
Tensor normal(const Shape& shape, float mean, float stddev, Generator& gen, int batch_axis);
// A tensor of 1/(1-p) with probability 1-p and 0 with probability p.
Tensor dropout_mask(const Shape& shape, float p, Generator& gen, int batch_axis = 0);
// Draws that mask m and applies it in the same pass: y = x · m, and
// keep[i] = 1 where m[i] = 1/(1-p), 0 where m[i] = 0 (the mask a byte an
// element, for backward). x, y and keep hold shape.numel() elements each.
void dropout_apply(const Shape& shape, float p, Generator& gen, int batch_axis, const float* x, float* y,
                   uint8_t* keep);
// The same draws applied after a ReLU: y = max(x, 0) · m. Nothing else is
// kept: y > 0 exactly where x > 0 and the element was kept.
void relu_dropout_apply(const Shape& shape, float p, Generator& gen, int batch_axis, const float* x, float* y);

// Turns draws into floats; exposed for the fills and their tests.
inline float bits_to_uniform(uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

}  // namespace rg
