#pragma once
// Tensor storage allocation with a cache of freed blocks.
//
// A training step allocates the same buffers (activations, gradients) every
// step and frees them all when the step's graph is released. Returned to the system
// and requested again, each megabyte costs ~256 page faults and a zero-fill
// by the kernel — measured here at over half the time of a LayerNorm
// forward+backward, and a quarter of an attentive-reader step when the cache
// was too small to hold one step's buffers. So freed blocks of at least
// kMinCachedBytes are kept, by size class (four per power of two, so nearly
// equal sizes share blocks), and handed out again. Smaller blocks go to
// malloc, which recycles them well.
//
// How much may be held: the live blocks and the cached free ones together at
// most (1 + headroom) times the program's peak of live cached-size blocks
// (and at least kCacheFloorBytes). A step's buffers then always fit, whatever
// the model, and the cache holds at most `headroom` (default 25%) of the peak
// beyond what the largest step needs. When a request or a release would pass
// that bound, the blocks freed longest ago go back to the system first: when
// batch shapes change, the size classes no longer used are the ones that go,
// so what the process holds after a step depends on the largest batch it has
// seen, not on the history of shapes.
//
// A step's cycle of sizes can need a little more than that: ConvPool-CNN-C
// holds 402 MB of blocks for a live peak of 317 MB (1.27×), since a free
// block of one size class cannot serve another. At a bound of 1.25× every
// step evicted 18 blocks and mapped them again: 12,700 page faults, ~20 ms
// of a 650 ms step. So a miss for a size among the last blocks evicted lets
// the bound grow by that block, up to `regrowth` × the peak more (at most
// 1.35× the peak by default). Sizes no longer used are never asked for again
// and do not grow it. The growth is capped tightly because a program whose
// shapes vary every step (length-bucketed batches) meets sizes it evicted a
// moment ago all the time: with room for 1.5×, RNNSearch on Multi30k held
// 2.1 GB where 1.9 GB serve it as well (BENCHMARKS.md, "Memory").
//
// Cached-size blocks are mapped from the system one by one (mmap) and
// unmapped when evicted, so evicted memory really leaves the process; a heap
// allocator would keep it in its arenas (glibc raises its mmap threshold
// after the first large free, and freed heap blocks are rarely trimmed).
// Under AddressSanitizer they come from aligned_alloc, which it checks.
//
// Blocks are 64-byte aligned. Thread-safe. An installed observer
// (core/observer.h) hears of every block taken and given back.
#include <cstddef>
#include <cstdint>

namespace rg {

inline constexpr size_t kMinCachedBytes = size_t{32} << 10;
// Small enough that a small model's resident size is set by its own peak, not
// by this floor filling up with blocks of every shape it has met.
inline constexpr size_t kCacheFloorBytes = size_t{32} << 20;

float* allocate_floats(int64_t count);  // uninitialised; count may be 0
void release_floats(float* p, int64_t count);

// What bounds the cache: live + cached ≤ (1 + headroom) · peak live, growing
// to at most (1 + headroom + regrowth) · peak live when evicted sizes come back.
struct CacheSettings {
  double headroom = 0.25;
  double regrowth = 0.10;
};
void set_cache_settings(const CacheSettings& settings);
CacheSettings cache_settings();

struct AllocatorStats {
  size_t cached_bytes;      // held in the cache, free
  size_t live_bytes;        // cached-size blocks handed out and not yet released
  size_t peak_live_bytes;   // the most live_bytes has been
  size_t hits, misses;      // cached-size allocations served from the cache or not
  size_t evictions;         // cached blocks given back to the system
};
AllocatorStats allocator_stats();
// Gives every cached block back to the system (and forgets the peak).
void release_cached_blocks();

}  // namespace rg
