#pragma once
// Threads. One call, set_num_threads, sets the thread count for both our own
// OpenMP loops and OpenBLAS. Inside our parallel regions OpenBLAS must not
// spawn threads of its own (that would oversubscribe the cores), so kernels
// that call BLAS from a parallel loop wrap it in BlasSerialScope.
//
// parallel_for splits [0, n) into contiguous chunks. Work smaller than `grain`
// items runs serially on the calling thread: starting a parallel region costs
// microseconds, more than a tiny op takes.
#include <cstdint>
#include <functional>

namespace rg {

void set_num_threads(int n);  // n >= 1: the threads to use
int num_threads();            // the threads in use: n, or fewer while use_threads(k) holds some back
int requested_threads();      // n, as set_num_threads set it
// Uses min(k, requested_threads()) threads (at least 1) until the next call
// or set_num_threads. core/polite_threads.h's FreeCoreFollower calls it
// between training steps, when a loop asks it to follow the free cores.
void use_threads(int k);

// Typical grains, in elements, for kernels of different weight per element.
inline constexpr int64_t kGrainElementwise = 32768;  // a few flops per element
inline constexpr int64_t kGrainHeavy = 4096;         // exp, tanh, log per element

// Calls body(lo, hi) on disjoint chunks covering [0, n).
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// The number of chunks parallel_for_chunks will use for n items.
int64_t chunk_count(int64_t n, int64_t grain);
// Calls body(chunk, lo, hi) for chunk = 0 .. chunk_count(n, grain) - 1, each
// on its own thread. Kernels that reduce across items keep one partial result
// per chunk and add them up afterwards, without locks.
void parallel_for_chunks(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t, int64_t)>& body);

// While alive, OpenBLAS runs single-threaded (restored on destruction).
class BlasSerialScope {
 public:
  BlasSerialScope();
  ~BlasSerialScope();
  BlasSerialScope(const BlasSerialScope&) = delete;
  BlasSerialScope& operator=(const BlasSerialScope&) = delete;
};

}  // namespace rg
