#pragma once
// Who holds the memory: live tensor bytes counted by a tag per block, for
// bench_memory. An observer of the library (core/observer.h): while it is
// installed, every block allocated carries the tag that was current on its
// thread at allocation time:
//
//   - an ObserverScope names it: "parameters" around model construction,
//     "optimizer state", "inputs", ...;
//   - outside any scope a block is "pending"; when an op records itself on
//     the tape, the pending blocks become the op's, so a forward op's output
//     and whatever its backward keeps are charged to "forward:<op>";
//   - the backward pass tags gradient buffers "gradients" (intermediate
//     nodes) or "parameter gradients" (leaves) and everything else it
//     allocates "backward workspace".
//
// The counters follow every block to its release, so `breakdown()` gives the
// bytes held now by each tag and the bytes each tag held at the moment the
// total was highest since the last reset_peak(). Blocks allocated before the
// accounting was installed are not counted. All sizes are as allocated
// (padded to the allocator's size class).
//
//   AllocationAccounting accounting;   // installs itself as the observer
//   step->run();
//   for (const TaggedBytes& t : accounting.breakdown().tags) ...
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rmsgrad/core/observer.h"

namespace rg::bench {

struct TaggedBytes {
  std::string tag;
  size_t live = 0;     // held now
  size_t at_peak = 0;  // held when the tracked total was at its peak
};
struct AllocationBreakdown {
  size_t live = 0, peak = 0;  // all tracked bytes now, and their peak
  std::vector<TaggedBytes> tags;
};

class AllocationAccounting : public Observer {
 public:
  AllocationAccounting();   // installs itself: one observer at a time
  ~AllocationAccounting();  // removes itself
  AllocationAccounting(const AllocationAccounting&) = delete;
  AllocationAccounting& operator=(const AllocationAccounting&) = delete;

  AllocationBreakdown breakdown() const;
  void reset_peak();  // the peak restarts from what is live now

  // Gives every still-live "pending" block the tag "forward:<op>".
  void op_recorded(const char* op) override;
  void allocation_finished(const void* block, size_t bytes) override;
  void release_started(const void* block, size_t bytes) override;
  // Scope names are tags.
  void scope_entered(const char* name) override;
  void scope_left() override;

 private:
  struct Block {
    size_t bytes;
    int tag;
  };
  // The tag id of a name (registered on first use); id 0 is "pending". Names
  // are string literals: scope names, and op names (as "forward:<op>").
  int tag_id_locked(const char* name, bool op);
  // The calling thread's tags of open scopes, innermost last.
  std::vector<int>& open_tags();

  const int serial_;  // tells this accounting's scopes from an earlier one's on each thread
  mutable std::mutex mutex_;
  std::vector<std::string> names_{"pending"};
  std::unordered_map<std::string, int> id_of_name_{{"pending", 0}};
  std::unordered_map<const char*, int> id_of_scope_, id_of_op_;  // fast paths by literal
  std::unordered_map<const void*, Block> blocks_;
  std::vector<const void*> pending_;  // blocks allocated with tag 0, in order
  // The live bytes of every tag, and a copy taken whenever the total reaches
  // a new peak. A new peak costs a copy of one counter per tag (a few dozen),
  // which happens on most allocations of a program's first step and rarely
  // after.
  std::vector<size_t> live_by_tag_{0}, peak_by_tag_{0};
  size_t live_ = 0, peak_ = 0;
};

}  // namespace rg::bench
