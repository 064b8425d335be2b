#include "rmsgrad/optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

void check_rate(double value, const char* schedule, const char* what) {
  check(std::isfinite(value) && value >= 0.0, "{}: {} must be finite and >= 0, got {}", schedule, what, value);
}

void check_step(int64_t step, const char* schedule) {
  check(step >= 0, "{}: step must be >= 0, got {}", schedule, step);
}

// From `from` at progress 0 to `to` at progress 1 along half a cosine wave.
double cosine_between(double from, double to, double progress) {
  return to + (from - to) * (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
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

WarmupSchedule::WarmupSchedule(double base, int64_t warmup) : base_(base), warmup_(warmup) {
  check_rate(base, "WarmupSchedule", "base");
  check(warmup >= 1, "WarmupSchedule: warmup must be >= 1 step, got {}", warmup);
}

double WarmupSchedule::lr(int64_t step) const {
  check_step(step, "WarmupSchedule");
  return base_ * static_cast<double>(std::min(step, warmup_)) / static_cast<double>(warmup_);
}

std::string WarmupSchedule::str() const {
  return fmt::format("{:g}·min(step, {})/{} (linear warm-up, then constant)", base_, warmup_, warmup_);
}

CosineSchedule::CosineSchedule(double base, int64_t total_steps, double min_lr, int64_t warmup)
    : base_(base), total_(total_steps), warmup_(warmup), min_lr_(min_lr) {
  check_rate(base, "CosineSchedule", "base");
  check_rate(min_lr, "CosineSchedule", "min_lr");
  check(0 <= warmup && warmup < total_steps, "CosineSchedule: need 0 <= warmup < total_steps, got warmup {} and "
        "total_steps {}", warmup, total_steps);
}

double CosineSchedule::lr(int64_t step) const {
  check_step(step, "CosineSchedule");
  if (step < warmup_) return base_ * static_cast<double>(step) / static_cast<double>(warmup_);
  if (step >= total_) return min_lr_;
  return cosine_between(base_, min_lr_, static_cast<double>(step - warmup_) / static_cast<double>(total_ - warmup_));
}

std::string CosineSchedule::str() const {
  return fmt::format("linear warm-up to {:g} at step {}, then cosine to {:g} at step {}", base_, warmup_, min_lr_,
                     total_);
}

OneCycleSchedule::OneCycleSchedule(double max_lr, int64_t total_steps, double pct_start, double div_factor,
                                   double final_div_factor)
    : max_lr_(max_lr), total_(total_steps) {
  check_rate(max_lr, "OneCycleSchedule", "max_lr");
  check(std::isfinite(div_factor) && div_factor > 0.0 && std::isfinite(final_div_factor) && final_div_factor > 0.0,
        "OneCycleSchedule: div_factor and final_div_factor must be finite and > 0, got {} and {}", div_factor,
        final_div_factor);
  check(pct_start > 0.0 && pct_start < 1.0 && pct_start * static_cast<double>(total_steps) > 1.0,
        "OneCycleSchedule: need 0 < pct_start < 1 and pct_start·total_steps > 1, got pct_start {} and total_steps {}",
        pct_start, total_steps);
  initial_ = max_lr / div_factor;
  min_lr_ = initial_ / final_div_factor;
  peak_ = pct_start * static_cast<double>(total_steps) - 1.0;
}

double OneCycleSchedule::lr(int64_t step) const {
  check_step(step, "OneCycleSchedule");
  if (step > total_) return min_lr_;
  const double e = static_cast<double>(std::max<int64_t>(step, 1) - 1);
  if (e <= peak_) return cosine_between(initial_, max_lr_, e / peak_);
  return cosine_between(max_lr_, min_lr_, (e - peak_) / (static_cast<double>(total_ - 1) - peak_));
}

std::string OneCycleSchedule::str() const {
  return fmt::format("one cycle: cosine from {:g} up to {:g} at step {:g}, down to {:g} at step {}", initial_, max_lr_,
                     peak_ + 1.0, min_lr_, total_);
}

}  // namespace rg
