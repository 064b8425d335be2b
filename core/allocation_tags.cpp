// Live bytes per tag; see allocation_tags.h.
//
// State: a map from each live block to its size and tag, the live bytes of
// every tag, and a copy of those per-tag counters taken whenever the total
// reaches a new peak. A new peak costs a copy of one counter per tag (a few
// dozen), which happens on most allocations of a program's first step and
// rarely after.
#include "rmsgrad/core/allocation_tags.h"

#include <atomic>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rg {

namespace {

std::atomic<bool> g_tracking{false};
thread_local int t_current_tag = 0;  // 0: pending

struct Block {
  size_t bytes;
  int tag;
};

struct Ledger {
  std::mutex mutex;
  std::vector<std::string> names{"pending"};
  std::unordered_map<std::string, int> id_of_name{{"pending", 0}};
  // Fast paths for names that are string literals: scope names, and op names
  // (charged as "forward:<op>").
  std::unordered_map<const char*, int> id_of_scope, id_of_op;
  std::unordered_map<const void*, Block> blocks;
  std::vector<const void*> pending;  // blocks allocated with tag 0, in order
  std::vector<size_t> live_by_tag{0}, peak_by_tag{0};
  size_t live = 0, peak = 0;

  int id_locked(const char* name, bool op) {
    auto& fast = op ? id_of_op : id_of_scope;
    if (auto it = fast.find(name); it != fast.end()) return it->second;
    const std::string full = op ? std::string("forward:") + name : std::string(name);
    auto [it, fresh] = id_of_name.try_emplace(full, static_cast<int>(names.size()));
    if (fresh) {
      names.push_back(full);
      live_by_tag.push_back(0);
      peak_by_tag.push_back(0);
    }
    fast.emplace(name, it->second);
    return it->second;
  }
};

Ledger& ledger() {
  static Ledger* l = new Ledger;  // never destroyed: blocks may be freed during static destruction
  return *l;
}

}  // namespace

void set_allocation_tracking(bool on) { g_tracking = on; }
bool allocation_tracking() { return g_tracking; }

int allocation_tag_id(const char* name) {
  Ledger& l = ledger();
  std::lock_guard lock(l.mutex);
  return l.id_locked(name, false);
}

ScopedAllocationTag::ScopedAllocationTag(const char* name) : previous_(t_current_tag) {
  if (g_tracking) t_current_tag = allocation_tag_id(name);
}
ScopedAllocationTag::~ScopedAllocationTag() { t_current_tag = previous_; }

void claim_pending_blocks(const char* op) {
  Ledger& l = ledger();
  std::lock_guard lock(l.mutex);
  if (l.pending.empty()) return;
  const int tag = l.id_locked(op, true);
  for (const void* p : l.pending) {
    auto it = l.blocks.find(p);
    if (it == l.blocks.end() || it->second.tag != 0) continue;  // released (or reused) since
    it->second.tag = tag;
    l.live_by_tag[0] -= it->second.bytes;
    l.live_by_tag[static_cast<size_t>(tag)] += it->second.bytes;
  }
  l.pending.clear();
}

void note_block_allocated(const void* p, size_t bytes) {
  Ledger& l = ledger();
  std::lock_guard lock(l.mutex);
  const int tag = t_current_tag;
  l.blocks[p] = {bytes, tag};
  if (tag == 0) l.pending.push_back(p);
  l.live_by_tag[static_cast<size_t>(tag)] += bytes;
  l.live += bytes;
  if (l.live > l.peak) {
    l.peak = l.live;
    l.peak_by_tag = l.live_by_tag;
  }
}

void note_block_released(const void* p) {
  Ledger& l = ledger();
  std::lock_guard lock(l.mutex);
  auto it = l.blocks.find(p);
  if (it == l.blocks.end()) return;  // allocated before tracking was turned on
  l.live_by_tag[static_cast<size_t>(it->second.tag)] -= it->second.bytes;
  l.live -= it->second.bytes;
  l.blocks.erase(it);
}

AllocationBreakdown allocation_breakdown() {
  Ledger& l = ledger();
  std::lock_guard lock(l.mutex);
  AllocationBreakdown out{l.live, l.peak, {}};
  for (size_t i = 0; i < l.names.size(); ++i)
    if (l.live_by_tag[i] > 0 || l.peak_by_tag[i] > 0) out.tags.push_back({l.names[i], l.live_by_tag[i], l.peak_by_tag[i]});
  return out;
}

void reset_tracked_peak() {
  Ledger& l = ledger();
  std::lock_guard lock(l.mutex);
  l.peak = l.live;
  l.peak_by_tag = l.live_by_tag;
}

}  // namespace rg
