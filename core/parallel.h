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
#include <string>

namespace rg {

inline constexpr int kMaxThreads = 4096;  // the most threads a program is given (--threads)

void set_num_threads(int n);  // n >= 1: the threads to use
int num_threads();            // the threads in use: n, or fewer while use_threads(k) holds some back
int requested_threads();      // n, as set_num_threads set it
// Uses min(k, requested_threads()) threads (at least 1) until the next call
// or set_num_threads. core/polite_threads.h's FreeCoreFollower calls it
// between training steps, when a loop asks it to follow the free cores.
void use_threads(int k);

// Without set_num_threads the count is libgomp's, from OMP_NUM_THREADS, read
// before main() starts. libgomp warns about a value it cannot read and runs
// on with every core; it takes 99999 as it is, and 1e12 wraps to a negative
// count. So a program checks the variable before its first step: this throws
// an rg::Error naming the variable and its value unless it is unset or a
// whole number of threads from 1 to kMaxThreads (surrounding blanks allowed).
// A list such as "4,2" (threads per level of nested regions) counts its first
// number, as libgomp does; every number must be a whole number above 0. An
// empty value is refused (an unset shell variable?). Run's constructor calls it.
void check_omp_num_threads();
std::string omp_num_threads_problem();  // the same, as a message ("" when sound)

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
