// The training loop (see training_loop.h).
#include "rmsgrad/experiments/common/training_loop.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/experiments/common/progress.h"
#include "rmsgrad/experiments/common/training_checkpoint.h"
#include "rmsgrad/optim/clip.h"

namespace rg {

TrainingLoop::TrainingLoop(Run& run, Module& model, Optimizer& optimizer, TrainingOptions options)
    : run_(run), model_(model), optimizer_(optimizer), options_(std::move(options)),
      checkpoint_path_(run.path("checkpoint.safetensors")), best_path_(run.path("best.safetensors")),
      group_(dist::ProcessGroup::world()),
      reducer_(group_, model.named_parameters(), static_cast<int64_t>(options_.bucket_mb * 1048576.0)) {
  check(options_.steps >= 1, "TrainingLoop: steps is {}; train at least one", options_.steps);
  check(options_.eval_every >= 1, "TrainingLoop: eval_every is {}; it must be at least 1", options_.eval_every);
  progress.best_metric = std::numeric_limits<double>::lowest();  // below every score
}

void add_loop_flags(CLI::App& app, TrainingOptions& options) {
  app.add_option("--stop-after", options.stop_after, "stop after this step as if interrupted (for testing --resume)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--train-minutes", options.train_minutes,
                 "a budget of training time: stop after the step that ends this many minutes of training "
                 "(evaluation excluded) or at --steps, whichever comes first, then validate and test as at "
                 "the last step (0: no budget)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--skip-nonfinite", options.skip_nonfinite,
               "skip a step whose loss or gradient is NaN or infinite instead of stopping");
  app.add_flag("--keep-threads", options.keep_threads,
               "use --threads threads throughout, also while other processes hold cores (by default a run "
               "uses only the cores they leave free, and its last bits then depend on the machine's load)");
  app.add_option("--bucket-mb", options.bucket_mb,
                 "under mpirun: MiB of gradients summed over the processes at a time, while backward runs")
      ->check(CLI::Range(0.001, 4096.0));
}

double TrainingLoop::epoch_of(int64_t step) const {
  if (progress.cursor == nullptr || progress.cursor->batches_per_epoch() == 0) return 0.0;
  return static_cast<double>(step) / static_cast<double>(progress.cursor->batches_per_epoch());
}

int64_t TrainingLoop::run() {
  check(static_cast<bool>(batch_loss) && static_cast<bool>(validate),
        "TrainingLoop::run: set batch_loss and validate first");
  if (run_.resuming()) resume();
  start_from_rank0();
  int64_t step = progress.step;
  run_.begin_training(step);
  // The step-0 baseline; a run resumed from its step-0 checkpoint logged it already.
  if (step == 0 && !run_.resuming()) validate_and_save(0);

  ProgressBar bar(options_.steps, "train");
  double interval_loss = 0.0;
  int64_t interval_steps = 0;
  int skipped_in_a_row = 0;
  // A run resumed after its --train-minutes ran out has no step left: it is
  // tested again, as a run resumed after its last step is.
  const bool budget_spent = run_.resuming() && out_of_time();
  while (step < options_.steps && !budget_spent) {
    if (!options_.keep_threads) {
      const int before = num_threads(), now = share_cores_with_other_processes();
      if (now != before)
        run_.note(fmt::format("step {}: {} thread{} from here: {} (--keep-threads keeps {})", step + 1, now,
                              now == 1 ? "" : "s",
                              now < before ? "other processes hold the other cores" : "cores are free again",
                              requested_threads()));
    }
    Var loss = batch_loss(step + 1);
    optimizer_.zero_grad();
    reducer_.backward(loss);  // loss.backward(), and the gradients summed over the processes
    const auto [gradient_norm, gradient_scale] = clip_gradients();
    const double loss_value = group_.sum(static_cast<double>(loss.item()));  // the global batch's loss
    tape().clear();
    ++step;
    if (const std::string fault = nonfinite(loss_value, gradient_norm); !fault.empty()) {
      if (!options_.skip_nonfinite) throw Error(fmt::format("{} at step {}; stopping (the last good checkpoint is "
                                                            "kept; --skip-nonfinite skips such steps)", fault, step));
      ++skipped_in_a_row;
      run_.note(fmt::format("step {}: {}; step skipped (--skip-nonfinite)", step, fault));
      check(skipped_in_a_row < kMaxSkippedInARow, "{} steps in a row had a non-finite loss or gradient, the last "
            "at step {}; stopping (the last good checkpoint is kept)", kMaxSkippedInARow, step);
    } else {
      optimizer_.step(gradient_scale);
      skipped_in_a_row = 0;
      interval_loss += loss_value;
      interval_steps += 1;
    }
    bar.update(step);

    const bool last = step == options_.steps || out_of_time();
    if (step % run_.log_every() == 0 || last) {
      Run::Fields fields = train_fields ? train_fields() : Run::Fields{};
      fields.emplace_back("epoch", epoch_of(step));
      const double mean_loss = interval_steps > 0 ? interval_loss / static_cast<double>(interval_steps) : NAN;
      run_.log_train(step, mean_loss, fields);
      interval_loss = 0.0;
      interval_steps = 0;
    }
    if (step % options_.eval_every == 0 || last) validate_and_save(step);
    if (last && step < options_.steps) {
      run_.note(fmt::format("stopping after step {}: {:.1f} minutes of training (--train-minutes {})", step,
                            run_.train_seconds() / 60.0, options_.train_minutes));
      break;
    }
    if (step == options_.stop_after) {
      run_.note(fmt::format("stopping after step {} (--stop-after)", step));
      bar.finish();
      return step;
    }
  }
  bar.finish();
  if (test && group_.writer()) {
    auto paused = run_.pause_clock();
    test(step);
  }
  return step;
}

// Every process must stop at the same step: rank 0's clock decides.
bool TrainingLoop::out_of_time() const {
  if (options_.train_minutes <= 0) return false;
  const double over = group_.writer() && run_.train_seconds() >= options_.train_minutes * 60.0 ? 1.0 : 0.0;
  return group_.sum(over) > 0;
}

void TrainingLoop::start_from_rank0() {
  if (!group_.distributed()) return;
  for (auto& [name, parameter] : model_.named_parameters()) group_.broadcast(parameter.value().span());
  for (auto& [name, buffer] : model_.named_buffers()) group_.broadcast(buffer.span());
}

GlobalClip TrainingLoop::clip_gradients() {
  const NamedParameters parameters = model_.named_parameters();
  if (options_.clip > 0 && options_.clip_per_parameter) {
    double sum_of_squares = 0.0;
    for (const auto& [name, norm] : clip_grad_norm_per_parameter(parameters, options_.clip))
      sum_of_squares += norm * norm;
    return {.norm = std::sqrt(sum_of_squares)};
  }
  if (options_.clip > 0) return global_clip(parameters, options_.clip);
  return {.norm = grad_norm(parameters)};
}

std::string TrainingLoop::nonfinite(double loss_value, double gradient_norm) const {
  if (std::isnan(loss_value)) return "loss is NaN";
  if (!std::isfinite(loss_value)) return loss_value > 0 ? "loss is +Inf" : "loss is -Inf";
  if (std::isfinite(gradient_norm)) return {};
  // The norm sums squares in double, so it is not finite only when an element is not.
  return fmt::format("gradient of {} is not finite", first_nonfinite_gradient(model_.named_parameters()));
}

void TrainingLoop::resume() {
  load_training_checkpoint(checkpoint_path_, model_, optimizer_, progress);
  run_.note(fmt::format("resumed from {} at step {}", checkpoint_path_, progress.step));
}

// Every process must hold the same parameters after every step; a bug that
// breaks that would otherwise go unseen (only rank 0's are saved). At each
// validation, a checksum of their bits is compared across processes.
void TrainingLoop::check_replicas_agree(int64_t step) const {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the parameters' bytes
  for (const auto& [name, parameter] : model_.named_parameters())
    for (float v : parameter.value().span()) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      hash = (hash ^ bits) * 1099511628211ull;
    }
  const std::vector<std::string> all = group_.all_gather(std::to_string(hash));
  for (size_t r = 1; r < all.size(); ++r)
    check(all[r] == all[0], "after step {} rank {} holds other parameters than rank 0; the processes have diverged",
          step, r);
}

void TrainingLoop::validate_and_save(int64_t step) {
  if (group_.distributed()) check_replicas_agree(step);
  if (!group_.writer()) return;  // rank 0 validates and writes; the others wait for it at the next step's sums
  auto paused = run_.pause_clock();
  Evaluation valid = validate(step);
  const double epoch = epoch_of(step);
  valid.fields.emplace_back("epoch", epoch);
  run_.log_eval("valid", step, valid.loss, valid.fields);
  if (valid.test) {
    valid.test->fields.emplace_back("epoch", epoch);
    run_.log_eval("test", step, valid.test->loss, valid.test->fields);
  }
  progress.step = step;
  progress.epoch = progress.cursor ? progress.cursor->epoch() : 0;
  progress.train_seconds = run_.train_seconds();
  const std::string& config = run_.settings_json();
  if (!options_.best_metric.empty() && valid.score > progress.best_metric) {
    progress.best_metric = valid.score;
    save_training_checkpoint(best_path_, model_, optimizer_, progress, config);
    run_.note(fmt::format("step {}: best validation {} so far, {:.2f}; kept in {}", step, options_.best_metric,
                          valid.score, best_path_));
  }
  save_training_checkpoint(checkpoint_path_, model_, optimizer_, progress, config);
}

int64_t TrainingLoop::load_best() {
  check(!options_.best_metric.empty(), "TrainingLoop::load_best: no best checkpoint is kept (set best_metric)");
  return load_trained_model(best_path_, model_);
}

}  // namespace rg
