#include "bench/allocation_accounting.h"

#include <atomic>

namespace rg::bench {

namespace {

std::atomic<int> accountings_made{0};

// The tags of the scopes open on this thread, and the accounting they belong to.
struct OpenTags {
  int serial = 0;
  std::vector<int> tags;
};
thread_local OpenTags thread_tags;

}  // namespace

AllocationAccounting::AllocationAccounting() : serial_(++accountings_made) { install_observer(this); }
AllocationAccounting::~AllocationAccounting() { install_observer(nullptr); }

std::vector<int>& AllocationAccounting::open_tags() {
  if (thread_tags.serial != serial_) thread_tags = {serial_, {}};  // left over from an earlier accounting
  return thread_tags.tags;
}

int AllocationAccounting::tag_id_locked(const char* name, bool op) {
  auto& fast = op ? id_of_op_ : id_of_scope_;
  if (auto it = fast.find(name); it != fast.end()) return it->second;
  const std::string full = op ? std::string("forward:") + name : std::string(name);
  auto [it, fresh] = id_of_name_.try_emplace(full, static_cast<int>(names_.size()));
  if (fresh) {
    names_.push_back(full);
    live_by_tag_.push_back(0);
    peak_by_tag_.push_back(0);
  }
  fast.emplace(name, it->second);
  return it->second;
}

void AllocationAccounting::scope_entered(const char* name) {
  std::lock_guard lock(mutex_);
  open_tags().push_back(tag_id_locked(name, false));
}

void AllocationAccounting::scope_left() {
  std::vector<int>& open = open_tags();
  if (!open.empty()) open.pop_back();
}

void AllocationAccounting::op_recorded(const char* op) {
  std::lock_guard lock(mutex_);
  if (pending_.empty()) return;
  const int tag = tag_id_locked(op, true);
  for (const void* p : pending_) {
    auto it = blocks_.find(p);
    if (it == blocks_.end() || it->second.tag != 0) continue;  // released (or reused) since
    it->second.tag = tag;
    live_by_tag_[0] -= it->second.bytes;
    live_by_tag_[static_cast<size_t>(tag)] += it->second.bytes;
  }
  pending_.clear();
}

void AllocationAccounting::allocation_finished(const void* block, size_t bytes) {
  if (!block) return;  // the allocation failed
  const std::vector<int>& open = open_tags();
  const int tag = open.empty() ? 0 : open.back();
  std::lock_guard lock(mutex_);
  blocks_[block] = {bytes, tag};
  if (tag == 0) pending_.push_back(block);
  live_by_tag_[static_cast<size_t>(tag)] += bytes;
  live_ += bytes;
  if (live_ > peak_) {
    peak_ = live_;
    peak_by_tag_ = live_by_tag_;
  }
}

void AllocationAccounting::release_started(const void* block, size_t) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(block);
  if (it == blocks_.end()) return;  // allocated before the accounting was installed
  live_by_tag_[static_cast<size_t>(it->second.tag)] -= it->second.bytes;
  live_ -= it->second.bytes;
  blocks_.erase(it);
}

AllocationBreakdown AllocationAccounting::breakdown() const {
  std::lock_guard lock(mutex_);
  AllocationBreakdown out{live_, peak_, {}};
  for (size_t i = 0; i < names_.size(); ++i)
    if (live_by_tag_[i] > 0 || peak_by_tag_[i] > 0) out.tags.push_back({names_[i], live_by_tag_[i], peak_by_tag_[i]});
  return out;
}

void AllocationAccounting::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_ = live_;
  peak_by_tag_ = live_by_tag_;
}

}  // namespace rg::bench
