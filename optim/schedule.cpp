#include "rmsgrad/optim/schedule.h"

#include <algorithm>
#include <cmath>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

void check_rate(double value, const char* schedule, const char* what) {
  check(std::isfinite(value) && value >= 0.0, "{}: {} must be finite and >= 0, got {}", schedule, what, value);
}

void check_step(int64_t step, const char* schedule) {
  check(step >= 0, "{}: step must be >= 0, got {}", schedule, step);
}

}  // namespace

ConstantSchedule::ConstantSchedule(double base) : base_(base) { check_rate(base, "ConstantSchedule", "base"); }

double ConstantSchedule::lr(int64_t step) const {
  check_step(step, "ConstantSchedule");
  return base_;
}

std::string ConstantSchedule::str() const { return fmt::format("constant {:g}", base_); }

LinearDecaySchedule::LinearDecaySchedule(double base, int64_t start, int64_t end, double end_value)
    : base_(base), start_(start), end_(end), end_value_(end_value) {
  check_rate(base, "LinearDecaySchedule", "base");
  check_rate(end_value, "LinearDecaySchedule", "end_value");
  check(0 <= start && start < end, "LinearDecaySchedule: need 0 <= start < end, got start {} and end {}", start, end);
}

double LinearDecaySchedule::lr(int64_t step) const {
  check_step(step, "LinearDecaySchedule");
  if (step <= start_) return base_;
  if (step >= end_) return end_value_;
  const double progress = static_cast<double>(step - start_) / static_cast<double>(end_ - start_);
  return base_ + (end_value_ - base_) * progress;
}

std::string LinearDecaySchedule::str() const {
  return fmt::format("{:g} until step {}, then linear to {:g} at step {}", base_, start_, end_value_, end_);
}

InverseSqrtSchedule::InverseSqrtSchedule(double base, int64_t warmup) : base_(base), warmup_(warmup) {
  check_rate(base, "InverseSqrtSchedule", "base");
  check(warmup >= 1, "InverseSqrtSchedule: warmup must be >= 1 step, got {}", warmup);
}

double InverseSqrtSchedule::lr(int64_t step) const {
  check_step(step, "InverseSqrtSchedule");
  if (step == 0) return 0.0;
  const double s = static_cast<double>(step), w = static_cast<double>(warmup_);
  return base_ * std::min(s / w, std::sqrt(w / s));
}

std::string InverseSqrtSchedule::str() const {
  return fmt::format("{:g}·min(step/{}, sqrt({}/step)) (linear warm-up, then 1/sqrt(step))", base_, warmup_, warmup_);
}

}  // namespace rg
