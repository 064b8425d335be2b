#pragma once
// Tensor storage allocation with a cache of freed blocks.
//
// A training step allocates the same buffers (activations, gradients) every
// step and frees them all when the tape is cleared. Returned to the system
// and requested again, each megabyte costs ~256 page faults and a zero-fill
// by the kernel — measured here at over half the time of a LayerNorm
// forward+backward, and a quarter of an attentive-reader step when the cache
// was too small to hold one step's buffers. So freed blocks of at least
// kMinCachedBytes are kept, by size class (four per power of two, so nearly
// equal sizes share blocks), and handed out again. Smaller blocks go to
// malloc, which recycles them well.
//
// How much the cache may hold: as much as the program has had in use at
// once (its peak of live cached-size blocks), and at least kCacheFloorBytes.
// A step's buffers then always fit, whatever the model, and the process
// never holds more than about twice its own peak; when the cache would
// overflow, the oldest blocks are released first.
//
// Blocks are 64-byte aligned. Thread-safe.
#include <cstddef>
#include <cstdint>

namespace rg {

inline constexpr size_t kMinCachedBytes = size_t{32} << 10;
inline constexpr size_t kCacheFloorBytes = size_t{256} << 20;

float* allocate_floats(int64_t count);  // uninitialised; count may be 0
void release_floats(float* p, int64_t count);

struct AllocatorStats {
  size_t cached_bytes;      // held in the cache, free
  size_t live_bytes;        // cached-size blocks handed out and not yet released
  size_t peak_live_bytes;   // the most live_bytes has been
  size_t hits, misses;      // cached-size allocations served from the cache or not
};
AllocatorStats allocator_stats();
// Gives every cached block back to the system (and forgets the peak).
void release_cached_blocks();

}  // namespace rg
