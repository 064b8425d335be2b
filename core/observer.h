#pragma once
// The one way to watch the library work from outside: an Observer hears the
// tape's ops record themselves and their backward run, every matrix product
// and every convolution on oneDNN's primitives,
// every block of tensor memory taken and given back, the calls that sum
// gradients over the processes of an MPI job, and the named scopes
// around allocations whose purpose the library knows. The library itself
// neither times nor counts anything; the benchmarks install their tools here
// (bench/profiling.h: the op profile and the product recording for
// bench_floor; bench/allocation_accounting.h: who holds the memory, for
// bench_memory).
//
// Nothing is installed by default, and then each hook costs one relaxed load
// of a pointer and a branch not taken.
//
//   struct ProductCounter : Observer {
//     std::atomic<int64_t> calls{0};
//     void gemm_started(const GemmCall&) override { ++calls; }
//   } counter;
//   install_observer(&counter);
//   step();
//   install_observer(nullptr);
//
// Hooks arrive on whichever thread does the work, parallel regions included
// (a convolution runs one product per sample on each thread), so an observer
// guards its own state. One observer is installed at a time.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/onednn_conv.h"

namespace rg {

// One call of gemm, gemm_batched or gemm_grid (core/gemm.h; a grid is a batch
// of its outers · inners items).
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool accumulate = false;  // beta ≠ 0
};

// One call of onednn_conv_forward or onednn_conv_backward: the passes it runs.
struct ConvCall {
  ConvDims dims{};
  bool forward = false;           // y from x and the weight
  bool backward_data = false;     // dx
  bool backward_weights = false;  // dw and db
};

class Observer {
 public:
  virtual ~Observer() = default;

  // The tape (autograd/tape.h). An op's forward has run and the op records
  // itself (under a NoGradGuard too), so what was allocated and the time
  // spent since the previous op are this op's. `op` is a string literal.
  virtual void op_recorded(const char* /*op*/) {}
  // The backward pass has run the backward function of a node made by `op`.
  virtual void backward_ran(const char* /*op*/) {}

  // Around every gemm and gemm_batched call.
  virtual void gemm_started(const GemmCall& /*call*/) {}
  virtual void gemm_finished(const GemmCall& /*call*/) {}
  // Around every convolution on oneDNN's primitives (core/onednn_conv.h).
  virtual void conv_started(const ConvCall& /*call*/) {}
  virtual void conv_finished(const ConvCall& /*call*/) {}

  // Around allocate_floats (core/allocator.h): `block` and its `bytes` as
  // allocated (padded to the allocator's size class); `block` is nullptr when
  // the system refused, and allocate_floats then throws.
  virtual void allocation_started() {}
  virtual void allocation_finished(const void* /*block*/, size_t /*bytes*/) {}
  // Around release_floats; the block is still held when the release starts.
  virtual void release_started(const void* /*block*/, size_t /*bytes*/) {}
  virtual void release_finished() {}

  // Around the calls that start, advance or wait for the sums of gradients
  // over the processes of an MPI job (dist/gradient_reducer.h), inside
  // backward and after it.
  virtual void communication_started() {}
  virtual void communication_finished() {}

  // The calling thread enters and leaves an ObserverScope.
  virtual void scope_entered(const char* /*name*/) {}
  virtual void scope_left() {}
};

namespace detail {
inline std::atomic<Observer*> the_observer{nullptr};
}

// The installed observer, or nullptr.
inline Observer* installed_observer() { return detail::the_observer.load(std::memory_order_relaxed); }

// Installs `observer`; nullptr removes the one installed. Installing over
// another is an error: each would miss what the other was told.
inline void install_observer(Observer* observer) {
  if (!observer) {
    detail::the_observer.store(nullptr);
    return;
  }
  Observer* none = nullptr;
  check(detail::the_observer.compare_exchange_strong(none, observer),
        "install_observer: another observer is already installed");
}

// While alive, the calling thread works inside `name` (a string literal): the
// tape names the memory it allocates for gradients ("gradients", "parameter
// gradients") and for the rest of a backward pass ("backward workspace"), and
// a program may name its own ("parameters", "inputs"). The observer hears of
// a scope that began while it was installed and ends while it still is.
class ObserverScope {
 public:
  explicit ObserverScope(const char* name) : observer_(installed_observer()) {
    if (observer_) observer_->scope_entered(name);
  }
  ~ObserverScope() {
    if (observer_ && observer_ == installed_observer()) observer_->scope_left();
  }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;

 private:
  Observer* observer_;
};

}  // namespace rg
