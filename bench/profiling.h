#pragma once
// Where a training step's time goes, and what it asks of BLAS: two observers
// of the library (core/observer.h) for bench_floor, which compares a step
// with its floor, the matrix products it must do.
//
// GemmRecording notes every gemm and gemm_batched call (one entry per call,
// whichever thread makes it) and every convolution on oneDNN's primitives:
// what a step asks of the product libraries, to be replayed alone as the
// step's floor.
//
// OpProfile charges every stretch of the wall time of the thread that made it
// to exactly one name, so the charges add up to the time from the profile's
// start to its last charge:
//
//   - recording an op charges the time since the previous charge to the op's
//     forward (what the op computed, and any code between the two ops: the
//     same rule by which bench/allocation_accounting.h charges memory);
//   - running a node's backward charges the time since the previous charge
//     to the op's backward (the tape's bookkeeping between two nodes joins
//     the node that follows it);
//   - mark(phase) charges the time since the previous charge to a phase of
//     the caller's that records no op: bench_floor's
//     "backward bookkeeping", "optimizer" and "other".
// (Under a data-parallel reducer the sums it starts when a parameter's
// gradient is final join the backward of the node after it.)
//
// Each charge is split further by two kernel clocks: the part spent in
// products (BLAS or oneDNN; a convolution on oneDNN's primitives counts as
// products) and the part spent taking and returning memory. An op's time
// minus its products is its own work. Inside a parallel region only the first
// thread's products and allocations are clocked (a convolution runs one
// product per sample on each thread): the threads share the work evenly, so
// its time there stands for the region's, and adding every thread's time
// would count the same wall time several times.
//
//   OpProfile profile;             // installs itself as the observer
//   step->run();                   // forward, backward, update
//   for (auto& [name, t] : profile.totals()) ...
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rmsgrad/core/observer.h"

namespace rg::bench {

// The floating-point operations of one recorded call.
inline double flops(const GemmCall& call) {
  return 2.0 * static_cast<double>(call.batch) * call.m * call.n * call.k;
}

// Each pass of a convolution is one product's worth: 2·N·O·Ho·Wo·C·kh·kw.
inline double flops(const ConvCall& call) {
  const ConvDims& d = call.dims;
  const double per_pass = 2.0 * static_cast<double>(d.n) * d.o * d.ho * d.wo * d.c * d.kh * d.kw;
  return per_pass * (call.forward + call.backward_data + call.backward_weights);
}

// Records every product and every convolution on oneDNN's primitives.
class GemmRecording : public Observer {
 public:
  GemmRecording();   // installs itself: one observer at a time
  ~GemmRecording();  // removes itself
  GemmRecording(const GemmRecording&) = delete;
  GemmRecording& operator=(const GemmRecording&) = delete;

  std::vector<GemmCall> calls() const;
  std::vector<ConvCall> conv_calls() const;

  void gemm_started(const GemmCall& call) override;
  void conv_started(const ConvCall& call) override;

 private:
  mutable std::mutex mutex_;
  std::vector<GemmCall> calls_;
  std::vector<ConvCall> conv_calls_;
};

struct OpTimes {
  double seconds = 0.0;             // all of it
  double gemm_seconds = 0.0;        // of which in BLAS products
  double allocation_seconds = 0.0;  // of which taking and returning memory
  int64_t calls = 0;
};

class OpProfile : public Observer {
 public:
  OpProfile();   // installs itself and starts the clock: one observer at a time
  ~OpProfile();  // removes itself
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  // Charges the time since the previous charge to a phase of the caller's.
  void mark(const std::string& phase);

  // Every name charged so far, with its times summed.
  const std::map<std::string, OpTimes>& totals() const { return totals_; }
  double total_seconds() const;

  // The calling thread's profile, or nullptr.
  static OpProfile* current();

  // An op's forward ("add") or backward ("add backward") is charged; `op`
  // is the tape's string literal, so the name is looked up once per op.
  void op_recorded(const char* op) override { charge_op(op, false); }
  void backward_ran(const char* op) override { charge_op(op, true); }
  // The kernel clocks.
  void gemm_started(const GemmCall&) override { start_clock(Clock::Gemm); }
  void gemm_finished(const GemmCall&) override { stop_clock(Clock::Gemm); }
  void conv_started(const ConvCall&) override { start_clock(Clock::Gemm); }  // a convolution is products
  void conv_finished(const ConvCall&) override { stop_clock(Clock::Gemm); }
  void allocation_started() override { start_clock(Clock::Allocation); }
  void allocation_finished(const void*, size_t) override { stop_clock(Clock::Allocation); }
  void release_started(const void*, size_t) override { start_clock(Clock::Allocation); }
  void release_finished() override { stop_clock(Clock::Allocation); }

 private:
  enum Clock { Gemm, Allocation, kClocks };
  struct Readings {
    double wall = 0.0, gemm = 0.0, allocation = 0.0;
  };
  Readings read() const;
  void start_clock(Clock clock);
  void stop_clock(Clock clock);
  void charge_op(const char* op, bool backward);
  void charge(OpTimes& times);

  std::atomic<int64_t> clocked_ns_[kClocks] = {};
  std::map<std::string, OpTimes> totals_;
  std::unordered_map<const char*, OpTimes*> forward_of_, backward_of_;  // by op literal, into totals_
  Readings last_;
};

// Charges a phase to the thread's profile, if there is one.
inline void profile_mark(const char* phase) {
  if (OpProfile* p = OpProfile::current()) p->mark(phase);
}

}  // namespace rg::bench
