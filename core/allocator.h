#pragma once
// Tensor storage allocation with a cache of large blocks.
//
// A training step allocates the same large buffers (activations, gradients)
// every step and frees them when the tape is cleared. Returned to the system
// and requested again, each megabyte costs ~256 page faults and a zero-fill
// by the kernel — measured here at over half the time of a LayerNorm
// forward+backward. So freed blocks of at least kMinCachedBytes are kept, by
// size class (four per power of two, so nearly equal sizes share blocks), and
// handed out again; the cache is bounded (kMaxCachedBytes) and the oldest
// sizes are released first when it is full. Small blocks go straight to
// malloc, which already recycles them well.
//
// Blocks are 64-byte aligned. Thread-safe.
#include <cstddef>
#include <cstdint>

namespace rg {

inline constexpr size_t kMinCachedBytes = size_t{1} << 20;
inline constexpr size_t kMaxCachedBytes = size_t{2} << 30;

float* allocate_floats(int64_t count);  // uninitialised; count may be 0
void release_floats(float* p, int64_t count);

struct AllocatorStats {
  size_t cached_bytes;  // held in the cache, free
  size_t hits, misses;  // large allocations served from the cache or not
};
AllocatorStats allocator_stats();
void release_cached_blocks();  // give every cached block back to the system

}  // namespace rg
