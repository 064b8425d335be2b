#include "core/allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace rg {

namespace {

// The bytes actually allocated for `count` floats. Small blocks: the next
// multiple of 64 (aligned_alloc wants a multiple of the alignment). Cached
// blocks: the next of four size classes per power of two (2^k · 1, 1.25, 1.5,
// 1.75), so that buffers of nearly the same size — the same activation of
// batches a few tokens longer or shorter — share blocks; at most 25% is wasted.
size_t padded_bytes(int64_t count) {
  size_t bytes = static_cast<size_t>(count > 0 ? count : 1) * sizeof(float);
  bytes = (bytes + 63) / 64 * 64;
  if (bytes < kMinCachedBytes) return bytes;
  const size_t quarter = std::bit_floor(bytes) / 4;
  return (bytes + quarter - 1) / quarter * quarter;
}

struct Cache {
  using Age = std::list<std::pair<size_t, float*>>;  // oldest first, for eviction
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<float*>> free_blocks;  // by size
  Age age;
  std::unordered_map<float*, Age::iterator> age_of;  // each free block's place in `age`
  size_t cached_bytes = 0, live_bytes = 0, peak_live_bytes = 0, hits = 0, misses = 0;

  ~Cache() { drop_all(); }

  size_t limit() const { return std::max(kCacheFloorBytes, peak_live_bytes); }

  void drop_all() {
    for (auto& [size, blocks] : free_blocks)
      for (float* p : blocks) std::free(p);
    free_blocks.clear();
    age.clear();
    age_of.clear();
    cached_bytes = 0;
  }

  void evict_oldest() {
    auto [size, p] = age.front();
    age.pop_front();
    age_of.erase(p);
    // Linear in the free blocks of this size; evictions happen only when the
    // sizes a program uses change, not in a steady training loop.
    std::erase(free_blocks[size], p);
    cached_bytes -= size;
    std::free(p);
  }

  float* take(size_t bytes) {
    auto it = free_blocks.find(bytes);
    if (it == free_blocks.end() || it->second.empty()) return nullptr;
    float* p = it->second.back();
    it->second.pop_back();
    auto where = age_of.find(p);
    age.erase(where->second);
    age_of.erase(where);
    cached_bytes -= bytes;
    return p;
  }

  void put(float* p, size_t bytes) {
    free_blocks[bytes].push_back(p);
    age.emplace_back(bytes, p);
    age_of.emplace(p, std::prev(age.end()));
    cached_bytes += bytes;
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors may be freed during static destruction
  return *c;
}

}  // namespace

float* allocate_floats(int64_t count) {
  const size_t bytes = padded_bytes(count);
  if (bytes >= kMinCachedBytes) {
    Cache& c = cache();
    std::lock_guard lock(c.mutex);
    c.live_bytes += bytes;
    c.peak_live_bytes = std::max(c.peak_live_bytes, c.live_bytes);
    if (float* p = c.take(bytes)) {
      ++c.hits;
      return p;
    }
    ++c.misses;
  }
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) {
    if (bytes >= kMinCachedBytes) {
      std::lock_guard lock(cache().mutex);
      cache().live_bytes -= bytes;
    }
    throw std::bad_alloc();
  }
  return p;
}

void release_floats(float* p, int64_t count) {
  if (!p) return;
  const size_t bytes = padded_bytes(count);
  if (bytes < kMinCachedBytes) {
    std::free(p);
    return;
  }
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.live_bytes -= bytes;  // so limit() ≥ peak ≥ bytes: the block always fits once older ones go
  while (c.cached_bytes + bytes > c.limit() && !c.age.empty()) c.evict_oldest();
  c.put(p, bytes);
}

AllocatorStats allocator_stats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return {c.cached_bytes, c.live_bytes, c.peak_live_bytes, c.hits, c.misses};
}

void release_cached_blocks() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.drop_all();
  c.peak_live_bytes = c.live_bytes;
}

}  // namespace rg
