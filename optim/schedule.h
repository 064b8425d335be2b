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
//   WarmupSchedule(base, warmup):
//       lr(s) = base·min(s, warmup)/warmup                        (lr(0) = 0)
//     a linear warm-up to `base` at s = warmup, then constant: torch's
//     LinearLR(start_factor = 1/warmup, total_iters = warmup − 1).
//   CosineSchedule(base, total, min_lr, warmup), the LLaMA recipe:
//       lr(s) = base·s/warmup                                     for s ≤ warmup
//             = min_lr + (base − min_lr)·(1 + cos(π·(s − warmup)/(total − warmup)))/2
//                                                                 for warmup < s < total
//             = min_lr                                            for s ≥ total
//     one continuous curve: up to `base` at s = warmup, down to min_lr at
//     s = total, so a run of `total` updates makes its last at min_lr. With
//     warmup = 0 it is torch's CosineAnnealingLR(T_max = total, eta_min =
//     min_lr), lr(0) = base; with warm-up, SequentialLR of the warmup above and
//     CosineAnnealingLR(T_max = total − warmup) from update `warmup` on.
//   OneCycleSchedule(max_lr, total, pct_start, div_factor, final_div_factor):
//     torch's OneCycleLR (anneal_strategy "cos", three_phase False) for
//     updates 1 … total. With e = s − 1 (torch's step_num), p = pct_start·total − 1
//     (the peak; torch's phase boundary, not rounded), initial = max_lr/div_factor
//     and min = initial/final_div_factor:
//       lr(s) = max_lr + (initial − max_lr)·(1 + cos(π·e/p))/2                    for e ≤ p
//             = min + (max_lr − min)·(1 + cos(π·(e − p)/(total − 1 − p)))/2        for e > p
//     from `initial` at s = 1 up to max_lr and down to `min` at s = total.
//     lr(0) = initial and lr(s) = min for s > total (torch raises there). The
//     learning rate only: torch's OneCycleLR also cycles the momentum (Adam's β1)
//     inversely by default; this schedule does not, so to match torch build it
//     with cycle_momentum = False or cycle β1 yourself (Adam::set_beta1).
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

class WarmupSchedule : public LearningRateSchedule {
 public:
  // warmup >= 1; base >= 0.
  WarmupSchedule(double base, int64_t warmup);
  double lr(int64_t step) const override;
  std::string str() const override;

 private:
  double base_;
  int64_t warmup_;
};

class CosineSchedule : public LearningRateSchedule {
 public:
  // 0 <= warmup < total_steps; base, min_lr >= 0.
  CosineSchedule(double base, int64_t total_steps, double min_lr = 0.0, int64_t warmup = 0);
  double lr(int64_t step) const override;
  std::string str() const override;

 private:
  double base_;
  int64_t total_, warmup_;
  double min_lr_;
};

class OneCycleSchedule : public LearningRateSchedule {
 public:
  // max_lr >= 0; 0 < pct_start < 1 with pct_start·total_steps > 1 (the rise
  // must span more than one update); div_factor, final_div_factor > 0.
  OneCycleSchedule(double max_lr, int64_t total_steps, double pct_start = 0.3, double div_factor = 25.0,
                   double final_div_factor = 1e4);
  double lr(int64_t step) const override;
  std::string str() const override;

 private:
  double max_lr_, initial_, min_lr_, peak_;  // peak_: p above
  int64_t total_;
};

}  // namespace rg
