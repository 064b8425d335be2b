#pragma once
// Who holds the memory: live tensor bytes counted by a tag per block.
//
// Off by default (it costs a hash-map update per allocation); bench_memory
// turns it on. Every block allocated while tracking is on carries the tag
// that was current on its thread at allocation time:
//
//   - a scope names it: ScopedAllocationTag tag("parameters") around model
//     construction, "optimizer state", "inputs", ...;
//   - outside any scope a block is "pending"; the tape claims the pending
//     blocks of each op when the op records itself (claim_pending_blocks),
//     so a forward op's output and whatever its backward keeps are charged
//     to "forward:<op>";
//   - the backward pass tags gradient buffers "gradients" (intermediate
//     nodes) or "parameter gradients" (leaves) and everything else it
//     allocates "backward workspace".
//
// The counters follow every block to its release, so `allocation_breakdown`
// gives the bytes held now by each tag and the bytes each tag held at the
// moment the total was highest since the last reset_tracked_peak().
// All sizes are as allocated (padded to the allocator's size class).
#include <cstddef>
#include <string>
#include <vector>

namespace rg {

void set_allocation_tracking(bool on);
bool allocation_tracking();

// The id of a tag name (registered on first use). Id 0 is "pending".
// Names must be string literals (or otherwise live for the whole program).
int allocation_tag_id(const char* name);

// While alive, blocks allocated on this thread carry `name`.
class ScopedAllocationTag {
 public:
  explicit ScopedAllocationTag(const char* name);
  ~ScopedAllocationTag();
  ScopedAllocationTag(const ScopedAllocationTag&) = delete;
  ScopedAllocationTag& operator=(const ScopedAllocationTag&) = delete;

 private:
  int previous_;
};

// Gives every still-live "pending" block the tag "forward:<op>" (the tape
// calls this when an op records itself; `op` is a string literal).
void claim_pending_blocks(const char* op);

// Called by the allocator for every block while tracking is on.
void note_block_allocated(const void* p, size_t bytes);
void note_block_released(const void* p);

struct TaggedBytes {
  std::string tag;
  size_t live = 0;     // held now
  size_t at_peak = 0;  // held when the tracked total was at its peak
};
struct AllocationBreakdown {
  size_t live = 0, peak = 0;  // all tracked bytes now, and their peak
  std::vector<TaggedBytes> tags;
};
AllocationBreakdown allocation_breakdown();
void reset_tracked_peak();  // the peak restarts from what is live now

}  // namespace rg
