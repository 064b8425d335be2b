// One optimizer step (see training_step.h).
#include "rmsgrad/train/training_step.h"

#include <fmt/format.h>

#include <cmath>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"

namespace rg {

TrainingStep::TrainingStep(Module& model, Optimizer& optimizer, ClipOptions clip, dist::ProcessGroup& group,
                           int64_t bucket_bytes)
    : model_(model), optimizer_(optimizer), clip_(clip), group_(group),
      reducer_(group, model.named_parameters(), bucket_bytes) {}

void TrainingStep::open_weight_cache() {
  if (product_precision() != Precision::BF16 || weight_cache_) return;
  std::vector<std::span<const float>> weights;
  for (const auto& [name, parameter] : model_.named_parameters())
    weights.emplace_back(parameter.value().data(), static_cast<size_t>(parameter.numel()));
  weight_cache_.emplace(std::move(weights));
}

StepOutcome TrainingStep::update(const Var& loss) { return finish(static_cast<double>(loss.item())); }

StepOutcome TrainingStep::finish(double local_loss) {
  close_weight_cache();  // the update changes the weights
  const auto [gradient_norm, gradient_scale] = clip_gradients();
  const double loss_value = group_.sum(local_loss);  // the global batch's loss
  tape().clear();
  StepOutcome outcome{.loss = loss_value, .gradient_norm = gradient_norm,
                      .nonfinite = nonfinite(loss_value, gradient_norm)};
  if (outcome.nonfinite.empty()) optimizer_.step(gradient_scale);
  zero_grad();
  return outcome;
}

void TrainingStep::accumulate(const Var& loss, int64_t micro_batches) {
  check(micro_batches >= 2, "TrainingStep::accumulate: {} micro-batches; accumulating needs at least 2",
        micro_batches);
  check(accumulated_ < micro_batches - 1, "TrainingStep::accumulate: {} micro-batches accumulated of {}; the last "
        "one goes through take(loss, {})", accumulated_ + 1, micro_batches, micro_batches);
  accumulated_loss_ += static_cast<double>(loss.item());
  ++accumulated_;
  tape().backward(loss * (1.0f / static_cast<float>(micro_batches)));  // this process's share only
  tape().clear();
}

StepOutcome TrainingStep::take(const Var& loss, int64_t micro_batches) {
  if (micro_batches == 1) return take(loss);
  check(accumulated_ == micro_batches - 1, "TrainingStep::take: {} micro-batches accumulated before the last of {}",
        accumulated_, micro_batches);
  const double mean_loss = (accumulated_loss_ + static_cast<double>(loss.item())) / static_cast<double>(micro_batches);
  accumulated_loss_ = 0.0;
  accumulated_ = 0;
  backward(loss * (1.0f / static_cast<float>(micro_batches)));  // summed over the processes, with the rest
  return finish(mean_loss);
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
