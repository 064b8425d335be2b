#include "rmsgrad/autograd/op_profile.h"

#include <chrono>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/kernel_clock.h"

namespace rg {

namespace {
thread_local OpProfile* thread_profile = nullptr;
}  // namespace

OpProfile* OpProfile::current() { return thread_profile; }

OpProfile::Clocks OpProfile::read_clocks() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return {std::chrono::duration<double>(now).count(), kernel_seconds(KernelKind::Gemm),
          kernel_seconds(KernelKind::Allocation)};
}

OpProfile::OpProfile() {
  check(thread_profile == nullptr, "OpProfile: this thread already has a profile running");
  thread_profile = this;
  previous_timing_ = kernel_timing();
  set_kernel_timing(true);
  last_ = read_clocks();
}

OpProfile::~OpProfile() {
  set_kernel_timing(previous_timing_);
  thread_profile = nullptr;
}

void OpProfile::charge(const std::string& name) {
  const Clocks now = read_clocks();
  OpTimes& t = totals_[name];
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

void profile_backward(const char* op) {
  if (OpProfile* p = OpProfile::current()) p->charge(std::string(op) + " backward");
}

}  // namespace rg
