#include "core/allocator.h"

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
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<float*>> free_blocks;  // by size
  std::list<std::pair<size_t, float*>> age;                       // oldest first, for eviction
  size_t cached_bytes = 0, hits = 0, misses = 0;

  ~Cache() { drop_all(); }

  void drop_all() {
    for (auto& [size, blocks] : free_blocks)
      for (float* p : blocks) std::free(p);
    free_blocks.clear();
    age.clear();
    cached_bytes = 0;
  }

  void evict_oldest() {
    auto [size, p] = age.front();
    age.pop_front();
    auto& blocks = free_blocks[size];
    std::erase(blocks, p);
    cached_bytes -= size;
    std::free(p);
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
    auto it = c.free_blocks.find(bytes);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      float* p = it->second.back();
      it->second.pop_back();
      for (auto a = c.age.begin(); a != c.age.end(); ++a)
        if (a->second == p) {
          c.age.erase(a);
          break;
        }
      c.cached_bytes -= bytes;
      ++c.hits;
      return p;
    }
    ++c.misses;
  }
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) throw std::bad_alloc();
  return p;
}

void release_floats(float* p, int64_t count) {
  if (!p) return;
  const size_t bytes = padded_bytes(count);
  if (bytes < kMinCachedBytes || bytes > kMaxCachedBytes / 4) {
    std::free(p);
    return;
  }
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  while (c.cached_bytes + bytes > kMaxCachedBytes && !c.age.empty()) c.evict_oldest();
  c.free_blocks[bytes].push_back(p);
  c.age.emplace_back(bytes, p);
  c.cached_bytes += bytes;
}

AllocatorStats allocator_stats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return {c.cached_bytes, c.hits, c.misses};
}

void release_cached_blocks() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.drop_all();
}

}  // namespace rg
