// One optimizer step (see training_step.h).
#include "rmsgrad/experiments/common/training_step.h"

#include <fmt/format.h>

#include <cmath>

#include "rmsgrad/autograd/tape.h"

namespace rg {

TrainingStep::TrainingStep(Module& model, Optimizer& optimizer, ClipOptions clip, dist::ProcessGroup& group,
                           int64_t bucket_bytes)
    : model_(model), optimizer_(optimizer), clip_(clip), group_(group),
      reducer_(group, model.named_parameters(), bucket_bytes) {}

StepOutcome TrainingStep::update(const Var& loss) {
  const auto [gradient_norm, gradient_scale] = clip_gradients();
  const double loss_value = group_.sum(static_cast<double>(loss.item()));  // the global batch's loss
  tape().clear();
  StepOutcome outcome{.loss = loss_value, .gradient_norm = gradient_norm,
                      .nonfinite = nonfinite(loss_value, gradient_norm)};
  if (outcome.nonfinite.empty()) optimizer_.step(gradient_scale);
  return outcome;
}

GlobalClip TrainingStep::clip_gradients() {
  const NamedParameters parameters = model_.named_parameters();
  if (clip_.clip > 0 && clip_.clip_per_parameter) {
    double sum_of_squares = 0.0;
    for (const auto& [name, norm] : clip_grad_norm_per_parameter(parameters, clip_.clip))
      sum_of_squares += norm * norm;
    return {.norm = std::sqrt(sum_of_squares)};
  }
  if (clip_.clip > 0) return global_clip(parameters, clip_.clip);
  return {.norm = grad_norm(parameters)};
}

std::string TrainingStep::nonfinite(double loss_value, double gradient_norm) const {
  if (std::isnan(loss_value)) return "loss is NaN";
  if (!std::isfinite(loss_value)) return loss_value > 0 ? "loss is +Inf" : "loss is -Inf";
  if (std::isfinite(gradient_norm)) return {};
  // The norm sums squares in double, so it is not finite only when an element is not.
  return fmt::format("gradient of {} is not finite", first_nonfinite_gradient(model_.named_parameters()));
}

}  // namespace rg
