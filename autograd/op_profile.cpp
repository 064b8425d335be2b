#include "rmsgrad/autograd/op_profile.h"

#include <atomic>
#include <chrono>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/kernel_clock.h"

namespace rg {

namespace {
std::atomic<OpProfile*> the_profile{nullptr};  // the process's one profile
thread_local OpProfile* thread_profile = nullptr;  // the same, on the thread that made it
}  // namespace

OpProfile* OpProfile::current() { return thread_profile; }

OpProfile::Clocks OpProfile::read_clocks() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return {std::chrono::duration<double>(now).count(), kernel_seconds(KernelKind::Gemm),
          kernel_seconds(KernelKind::Allocation)};
}

OpProfile::OpProfile() {
  OpProfile* none = nullptr;
  check(the_profile.compare_exchange_strong(none, this), "OpProfile: another profile is already running");
  thread_profile = this;
  previous_timing_ = kernel_timing();
  set_kernel_timing(true);
  last_ = read_clocks();
}

OpProfile::~OpProfile() {
  set_kernel_timing(previous_timing_);
  thread_profile = nullptr;
  the_profile.store(nullptr);
}

void OpProfile::mark(const std::string& phase) { charge(totals_[phase]); }

void OpProfile::charge_op(const char* op, bool backward) {
  auto& cache = backward ? backward_of_ : forward_of_;
  auto [it, added] = cache.try_emplace(op, nullptr);
  if (added) it->second = &totals_[backward ? std::string(op) + " backward" : std::string(op)];
  charge(*it->second);
}

void OpProfile::charge(OpTimes& t) {
  const Clocks now = read_clocks();
  t.seconds += now.wall - last_.wall;
  t.gemm_seconds += now.gemm - last_.gemm;
  t.allocation_seconds += now.allocation - last_.allocation;
  t.calls += 1;
  last_ = now;
}

double OpProfile::total_seconds() const {
  double sum = 0.0;
  for (const auto& entry : totals_) sum += entry.second.seconds;
  return sum;
}

}  // namespace rg
