#include "rmsgrad/core/allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <deque>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "rmsgrad/core/observer.h"

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

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapBlocks = false;  // let AddressSanitizer see every block
#else
constexpr bool kMapBlocks = true;
#endif

// Cached-size blocks (a multiple of 8 KB, so of the page size) come straight
// from the system and go straight back.
float* map_block(size_t bytes) {
  if (!kMapBlocks) return static_cast<float*>(std::aligned_alloc(64, bytes));
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<float*>(p);
}

void unmap_block(float* p, size_t bytes) {
  if (kMapBlocks) munmap(p, bytes);
  else std::free(p);
}

struct Cache {
  using Age = std::list<std::pair<size_t, float*>>;  // oldest first, for eviction
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<float*>> free_blocks;  // by size
  Age age;
  std::unordered_map<float*, Age::iterator> age_of;  // each free block's place in `age`
  size_t cached_bytes = 0, live_bytes = 0, peak_live_bytes = 0, hits = 0, misses = 0, evictions = 0;
  CacheSettings settings;
  // The sizes of the last blocks evicted, and the room the bound has grown by
  // because some of them were asked for again (see allocator.h).
  std::deque<size_t> evicted_sizes;
  size_t regrown_bytes = 0;
  static constexpr size_t kEvictionsRemembered = 64;

  ~Cache() { drop_all(); }

  // The most live + cached may be.
  size_t limit() const {
    const double peak = static_cast<double>(peak_live_bytes);
    const double grown = std::min(static_cast<double>(regrown_bytes), settings.regrowth * peak);
    return std::max(kCacheFloorBytes, static_cast<size_t>(peak * (1.0 + settings.headroom) + grown));
  }

  // A miss for a size evicted a moment ago: the bound is too tight for the
  // program's cycle of sizes, and every step would unmap a block and fault
  // a fresh one in. Let the bound grow by that block instead.
  void note_miss(size_t bytes) {
    auto it = std::find(evicted_sizes.begin(), evicted_sizes.end(), bytes);
    if (it == evicted_sizes.end()) return;
    evicted_sizes.erase(it);
    regrown_bytes += bytes;
  }

  // Evicts the oldest free blocks until `incoming` more bytes fit under the
  // limit (incoming: a block about to be cached, or 0 after a miss, whose
  // bytes are already counted live).
  void make_room(size_t incoming) {
    while (!age.empty() && live_bytes + cached_bytes + incoming > limit()) evict_oldest();
  }

  void drop_all() {
    for (auto& [size, blocks] : free_blocks)
      for (float* p : blocks) unmap_block(p, size);
    free_blocks.clear();
    age.clear();
    age_of.clear();
    cached_bytes = 0;
    evicted_sizes.clear();
    regrown_bytes = 0;
  }

  void evict_oldest() {
    auto [size, p] = age.front();
    age.pop_front();
    age_of.erase(p);
    // Linear in the free blocks of this size; evictions happen only when the
    // sizes a program uses change, not in a steady training loop.
    std::erase(free_blocks[size], p);
    cached_bytes -= size;
    ++evictions;
    evicted_sizes.push_back(size);
    if (evicted_sizes.size() > kEvictionsRemembered) evicted_sizes.pop_front();
    unmap_block(p, size);
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

namespace {

float* allocate_cached_size(size_t bytes) {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.live_bytes += bytes;
  c.peak_live_bytes = std::max(c.peak_live_bytes, c.live_bytes);
  if (float* p = c.take(bytes)) {
    ++c.hits;
    return p;
  }
  ++c.misses;
  c.note_miss(bytes);
  c.make_room(0);  // a new block: older free ones go first if it would pass the bound
  float* p = map_block(bytes);
  if (!p) c.live_bytes -= bytes;
  return p;
}

void release_block(float* p, size_t bytes) {
  if (bytes < kMinCachedBytes) {
    std::free(p);
    return;
  }
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.live_bytes -= bytes;  // so limit() ≥ peak ≥ bytes: the block always fits once older ones go
  c.make_room(bytes);
  c.put(p, bytes);
}

}  // namespace

float* allocate_floats(int64_t count) {
  Observer* observer = installed_observer();
  if (observer) observer->allocation_started();
  const size_t bytes = padded_bytes(count);
  float* p = bytes >= kMinCachedBytes ? allocate_cached_size(bytes)
                                      : static_cast<float*>(std::aligned_alloc(64, bytes));
  if (observer) observer->allocation_finished(p, bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void release_floats(float* p, int64_t count) {
  if (!p) return;
  Observer* observer = installed_observer();
  const size_t bytes = padded_bytes(count);
  if (observer) observer->release_started(p, bytes);
  release_block(p, bytes);
  if (observer) observer->release_finished();
}

void set_cache_settings(const CacheSettings& settings) {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.settings = settings;
  c.make_room(0);
}

CacheSettings cache_settings() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.settings;
}

AllocatorStats allocator_stats() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  return {c.cached_bytes, c.live_bytes, c.peak_live_bytes, c.hits, c.misses, c.evictions};
}

void release_cached_blocks() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  c.drop_all();
  c.peak_live_bytes = c.live_bytes;
}

}  // namespace rg
