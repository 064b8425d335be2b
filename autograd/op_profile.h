#pragma once
// Where a training step's time goes, op by op: what stands between a step
// and its floor, the matrix products it must do (bench/bench_floor).
//
// While an OpProfile is alive, the tape of the thread that made it charges
// every stretch of wall time to exactly one name, so the charges add up to
// the time the profile ran:
//
//   - recording an op charges the time since the previous charge to the op's
//     forward (what the op computed, and any code between the two ops: the
//     same rule by which core/allocation_tags charges memory);
//   - running a node's backward charges the time since the previous charge
//     to the op's backward (the tape's bookkeeping between two nodes joins
//     the node that follows it);
//   - mark(phase) charges the time since the previous charge to a phase of
//     the caller's that records no op: "clip", "optimizer", "tape clear".
//
// Each charge is split further by the kernel clocks (core/kernel_clock.h):
// the part spent in BLAS products and the part spent taking and returning
// memory. An op's time minus its products is its own work.
//
//   OpProfile profile;
//   step->run();                   // forward, backward, update
//   for (auto& [name, t] : profile.totals()) ...
#include <cstdint>
#include <map>
#include <string>

namespace rg {

struct OpTimes {
  double seconds = 0.0;             // all of it
  double gemm_seconds = 0.0;        // of which in BLAS products
  double allocation_seconds = 0.0;  // of which taking and returning memory
  int64_t calls = 0;
};

class OpProfile {
 public:
  OpProfile();   // starts the clock; one profile per thread at a time
  ~OpProfile();  // stops it
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  // Charges the time since the previous charge to `name`: "add" for an op's
  // forward, "add backward" for its backward, or a phase of the caller's.
  void charge(const std::string& name);
  void mark(const std::string& phase) { charge(phase); }

  // Every name charged so far, with its times summed.
  const std::map<std::string, OpTimes>& totals() const { return totals_; }
  double total_seconds() const;

  // The calling thread's profile, or nullptr.
  static OpProfile* current();

 private:
  struct Clocks {
    double wall = 0.0, gemm = 0.0, allocation = 0.0;
  };
  static Clocks read_clocks();

  std::map<std::string, OpTimes> totals_;
  Clocks last_;
  bool previous_timing_ = false;
};

// Charges to the thread's profile, if there is one (the tape calls these).
inline void profile_forward(const char* op) {
  if (OpProfile* p = OpProfile::current()) p->charge(op);
}
void profile_backward(const char* op);
inline void profile_mark(const char* phase) {
  if (OpProfile* p = OpProfile::current()) p->mark(phase);
}

}  // namespace rg
