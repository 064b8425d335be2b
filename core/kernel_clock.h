#pragma once
// Wall-clock counters for two kinds of work that happen inside many ops: BLAS
// products (core/gemm) and taking or returning memory (core/allocator). A
// step profile (autograd/op_profile.h) reads them before and after each op,
// so that an op's time splits into its products, its allocations and the
// rest — the rest being what a step spends beyond its matrix-product floor.
//
// Off by default: then each counted call costs one relaxed atomic load.
// Inside a parallel region only the first thread's calls count (a convolution
// runs one product per sample on each thread): the threads share the work
// evenly, so its time there stands for the region's, and adding every
// thread's time would count the same wall time several times.
#include <cstdint>

namespace rg {

enum class KernelKind { Gemm, Allocation };
inline constexpr int kKernelKinds = 2;

void set_kernel_timing(bool on);
bool kernel_timing();
// Seconds counted for `kind` since the program started.
double kernel_seconds(KernelKind kind);

// Adds its lifetime to `kind` when timing is on and it is made on the first
// thread (outside a parallel region, the only one).
class KernelTimer {
 public:
  explicit KernelTimer(KernelKind kind);
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

 private:
  int kind_ = -1;  // -1: not timing
  int64_t start_ns_ = 0;
};

}  // namespace rg
