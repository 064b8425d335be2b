#pragma once
// Learning-rate schedules: small objects that answer lr(step).
//
// `step` is the number of the update about to be made, counted from 1:
// before optimizer.step(), call optimizer.set_lr(schedule.lr(optimizer.step_count() + 1)).
// Step 0 is accepted too (a schedule's value "before training").
//
//   ConstantSchedule(base):            lr(s) = base
//   LinearDecaySchedule(base, start, end, end_value):
//       lr(s) = base                                              for s ≤ start
//             = base + (end_value − base)·(s − start)/(end − start) for start < s < end
//             = end_value                                         for s ≥ end
//     The CIFAR recipe (constant for the first half of T updates, then
//     linearly to 0) is LinearDecaySchedule(base, T/2, T, 0): its last update
//     has lr 0; pass end = T + 1 to keep every update non-zero.
//   InverseSqrtSchedule(base, warmup):
//       lr(s) = base·min(s/warmup, √(warmup/s))                   (lr(0) = 0)
//     a linear warm-up to `base` at s = warmup, then decay as 1/√s. This is
//     the Transformer's d^−0.5·min(s^−0.5, s·warmup^−1.5) with
//     base = (d·warmup)^−0.5.
#include <cstdint>
#include <string>

namespace rg {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  virtual double lr(int64_t step) const = 0;  // step >= 0
  virtual std::string str() const = 0;        // for the run's printed header
};

class ConstantSchedule : public LearningRateSchedule {
 public:
  explicit ConstantSchedule(double base);
  double lr(int64_t step) const override;
  std::string str() const override;

 private:
  double base_;
};

class LinearDecaySchedule : public LearningRateSchedule {
 public:
  // 0 <= start < end; base, end_value >= 0.
  LinearDecaySchedule(double base, int64_t start, int64_t end, double end_value = 0.0);
  double lr(int64_t step) const override;
  std::string str() const override;

 private:
  double base_;
  int64_t start_, end_;
  double end_value_;
};

class InverseSqrtSchedule : public LearningRateSchedule {
 public:
  // warmup >= 1; base >= 0.
  InverseSqrtSchedule(double base, int64_t warmup);
  double lr(int64_t step) const override;
  std::string str() const override;

 private:
  double base_;
  int64_t warmup_;
};

}  // namespace rg
