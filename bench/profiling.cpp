#include "bench/profiling.h"

#include <omp.h>

#include <chrono>

namespace rg::bench {

namespace {

thread_local OpProfile* thread_profile = nullptr;  // the profile, on the thread that made it
thread_local int64_t clock_started_ns[2] = {};     // per kernel clock, on this thread

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

GemmRecording::GemmRecording() { install_observer(this); }
GemmRecording::~GemmRecording() { install_observer(nullptr); }

void GemmRecording::gemm_started(const GemmCall& call) {
  std::lock_guard lock(mutex_);
  calls_.push_back(call);
}

std::vector<GemmCall> GemmRecording::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

void GemmRecording::conv_started(const ConvCall& call) {
  std::lock_guard lock(mutex_);
  conv_calls_.push_back(call);
}

std::vector<ConvCall> GemmRecording::conv_calls() const {
  std::lock_guard lock(mutex_);
  return conv_calls_;
}

OpProfile* OpProfile::current() { return thread_profile; }

OpProfile::OpProfile() {
  install_observer(this);
  thread_profile = this;
  last_ = read();
}

OpProfile::~OpProfile() {
  install_observer(nullptr);
  thread_profile = nullptr;
}

OpProfile::Readings OpProfile::read() const {
  auto seconds = [](int64_t ns) { return static_cast<double>(ns) * 1e-9; };
  return {seconds(now_ns()), seconds(clocked_ns_[Gemm].load(std::memory_order_relaxed)),
          seconds(clocked_ns_[Allocation].load(std::memory_order_relaxed))};
}

void OpProfile::start_clock(Clock clock) {
  if (omp_get_thread_num() == 0) clock_started_ns[clock] = now_ns();
}

void OpProfile::stop_clock(Clock clock) {
  if (omp_get_thread_num() == 0)
    clocked_ns_[clock].fetch_add(now_ns() - clock_started_ns[clock], std::memory_order_relaxed);
}

void OpProfile::mark(const std::string& phase) { charge(totals_[phase]); }

void OpProfile::charge_op(const char* op, bool backward) {
  if (thread_profile != this) return;  // another thread's tape
  auto& cache = backward ? backward_of_ : forward_of_;
  auto [it, added] = cache.try_emplace(op, nullptr);
  if (added) it->second = &totals_[backward ? std::string(op) + " backward" : std::string(op)];
  charge(*it->second);
}

void OpProfile::charge(OpTimes& t) {
  const Readings now = read();
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

}  // namespace rg::bench
