#pragma once
// Where a training step's time goes, op by op: what stands between a step
// and its floor, the matrix products it must do (bench/bench_floor).
//
// While an OpProfile is alive, the tape of the thread that made it charges
// every stretch of wall time to exactly one name, so the charges add up to
// the time from the profile's start to its last charge:
//
//   - recording an op charges the time since the previous charge to the op's
//     forward (what the op computed, and any code between the two ops: the
//     same rule by which core/allocation_tags charges memory);
//   - running a node's backward charges the time since the previous charge
//     to the op's backward (the tape's bookkeeping between two nodes joins
//     the node that follows it);
//   - mark(phase) charges the time since the previous charge to a phase of
//     the caller's that records no op: bench_floor's "zero grad",
//     "backward bookkeeping", "clip", "optimizer" and "other".
// (Under a data-parallel reducer the sums it starts when a parameter's
// gradient is final join the backward of the node after it.)
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
#include <unordered_map>

namespace rg {

struct OpTimes {
  double seconds = 0.0;             // all of it
  double gemm_seconds = 0.0;        // of which in BLAS products
  double allocation_seconds = 0.0;  // of which taking and returning memory
  int64_t calls = 0;
};

class OpProfile {
 public:
  OpProfile();   // starts the clock; one profile in the process at a time (the kernel clocks are global)
  ~OpProfile();  // stops it
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  // Charges the time since the previous charge to a phase of the caller's.
  void mark(const std::string& phase);
  // The same for an op's forward ("add") or backward ("add backward"); `op`
  // is the tape's string literal, so the name is looked up once per op.
  void charge_op(const char* op, bool backward);

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

  void charge(OpTimes& times);

  std::map<std::string, OpTimes> totals_;
  std::unordered_map<const char*, OpTimes*> forward_of_, backward_of_;  // by op literal, into totals_
  Clocks last_;
  bool previous_timing_ = false;
};

// Charges to the thread's profile, if there is one (the tape calls these).
inline void profile_forward(const char* op) {
  if (OpProfile* p = OpProfile::current()) p->charge_op(op, false);
}
inline void profile_backward(const char* op) {
  if (OpProfile* p = OpProfile::current()) p->charge_op(op, true);
}
inline void profile_mark(const char* phase) {
  if (OpProfile* p = OpProfile::current()) p->mark(phase);
}

}  // namespace rg
