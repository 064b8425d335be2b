#include "rmsgrad/core/kernel_clock.h"

#include <omp.h>

#include <atomic>
#include <chrono>

namespace rg {

namespace {
std::atomic<bool> timing{false};
std::atomic<int64_t> counted_ns[kKernelKinds] = {};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void set_kernel_timing(bool on) { timing.store(on, std::memory_order_relaxed); }
bool kernel_timing() { return timing.load(std::memory_order_relaxed); }

double kernel_seconds(KernelKind kind) {
  return static_cast<double>(counted_ns[static_cast<int>(kind)].load(std::memory_order_relaxed)) * 1e-9;
}

KernelTimer::KernelTimer(KernelKind kind) {
  if (!timing.load(std::memory_order_relaxed) || omp_get_thread_num() != 0) return;
  kind_ = static_cast<int>(kind);
  start_ns_ = now_ns();
}

KernelTimer::~KernelTimer() {
  if (kind_ >= 0) counted_ns[kind_].fetch_add(now_ns() - start_ns_, std::memory_order_relaxed);
}

}  // namespace rg
