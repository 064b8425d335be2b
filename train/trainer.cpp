// The trainer (see trainer.h).
#include "rmsgrad/train/trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <cstring>
#include <limits>
#include <utility>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/layers/save_load.h"
#include "rmsgrad/optim/save_load.h"
#include "rmsgrad/train/training_progress.h"

namespace rg {

Trainer::Trainer(Run& run, Module& model, Optimizer& optimizer, TrainingOptions options)
    : run_(run), model_(model), optimizer_(optimizer), options_(std::move(options)),
      checkpoint_path_(run.path("checkpoint.safetensors")), best_path_(run.path("best.safetensors")),
      group_(dist::ProcessGroup::world()),
      training_step_(model, optimizer, {.clip = options_.clip, .clip_per_parameter = options_.clip_per_parameter},
                     group_, static_cast<int64_t>(options_.bucket_mb * 1048576.0)),
      best_score_(std::numeric_limits<double>::lowest()) {  // below every score
  check(options_.steps >= 1, "Trainer: steps is {}; train at least one", options_.steps);
  check(options_.eval_every >= 1, "Trainer: eval_every is {}; it must be at least 1", options_.eval_every);
  check(options_.batches_per_epoch >= 0, "Trainer: batches_per_epoch is {}; give 0 or more",
        options_.batches_per_epoch);
  check(options_.accumulate_grad_batches >= 1, "Trainer: accumulate_grad_batches is {}; it must be at least 1",
        options_.accumulate_grad_batches);
  if (options_.precision) set_product_precision(*options_.precision);
}

Trainer::~Trainer() = default;

void Trainer::keep(ResumableCursor& cursor) {
  check(!started_, "Trainer::keep: call it before start()");
  cursor_ = &cursor;
}

void Trainer::keep(const std::string& name, Generator& generator) {
  check(!started_, "Trainer::keep: call it before start()");
  for (const auto& [other, gen] : generators_) check(other != name, "Trainer::keep: two generators named '{}'", name);
  generators_.emplace_back(name, &generator);
}

int64_t Trainer::start() {
  check(!started_, "Trainer::start: called twice");
  started_ = true;
  if (run_.resuming()) resume();
  start_from_rank0();
  run_.begin_training(step_, resumed_metrics_lines_);
  bar_ = std::make_unique<ProgressBar>(options_.steps, "train");
  // A run resumed after its --train-minutes ran out has no step left: it is
  // tested again, as a run resumed after its last step is.
  budget_spent_ = run_.resuming() && out_of_time();
  return step_;
}

bool Trainer::running() {
  check(started_, "Trainer::running: call start() first");
  if (stopped_) return false;
  bool more = step_ < options_.steps && !budget_spent_;
  if (took_step_ && last_ && step_ < options_.steps) {
    run_.note(fmt::format("stopping after step {}: {:.1f} minutes of training (--train-minutes {})", step_,
                          run_.train_seconds() / 60.0, options_.train_minutes));
    more = false;
  } else if (took_step_ && step_ == options_.stop_after) {
    run_.note(fmt::format("stopping after step {} (--stop-after)", step_));
    stopped_early_ = true;
    more = false;
  }
  if (!more) {
    bar_->finish();
    stopped_ = true;
    training_step_.close_weight_cache();  // a micro-batch's step may end the run
    return false;
  }
  training_step_.open_weight_cache();  // bf16 weights for this step's products, until its update
  return true;
}

void Trainer::step(const Var& loss) {
  check(started_ && !stopped_, "Trainer::step: call it while running() says yes");
  const int64_t micro_batches = options_.accumulate_grad_batches;
  if (++micro_batch_ < micro_batches) {  // a micro-batch's gradient, added; the update comes with the last
    training_step_.accumulate(loss, micro_batches);
    just_updated_ = false;
    return;
  }
  micro_batch_ = 0;
  just_updated_ = true;
  const StepOutcome outcome = training_step_.take(loss, micro_batches);  // no update when not finite
  if (options_.follow_free_cores) {
    const int threads_before = num_threads();
    if (const int now = free_cores_.follow(); now != threads_before)
      run_.note(fmt::format("step {}: {} thread{} from here: {} (of {})", step_ + 2, now, now == 1 ? "" : "s",
                            now < threads_before ? "other processes hold the other cores" : "cores are free again",
                            requested_threads()));
  }
  ++step_;
  took_step_ = true;
  if (!outcome.nonfinite.empty()) {
    if (!options_.skip_nonfinite)
      throw Error(fmt::format("{} at step {}; stopping (the last good checkpoint is kept; --skip-nonfinite skips "
                              "such steps)", outcome.nonfinite, step_));
    ++skipped_in_a_row_;
    run_.note(fmt::format("step {}: {}; step skipped (--skip-nonfinite)", step_, outcome.nonfinite));
    // A loss that is not finite because an earlier update overflowed would
    // stay so: the model and optimizer go back to the last good checkpoint.
    if (const std::string bad = nonfinite_state(); !bad.empty()) restore_last_good(bad);
    check(skipped_in_a_row_ < kMaxSkippedInARow, "{} steps in a row had a non-finite loss or gradient, the last "
          "at step {}; stopping (the last good checkpoint is kept)", kMaxSkippedInARow, step_);
  } else {
    skipped_in_a_row_ = 0;
    interval_loss_ += outcome.loss;
    interval_steps_ += 1;
  }
  bar_->update(step_);
  last_ = step_ == options_.steps || out_of_time();
}

bool Trainer::due_for_log() const { return just_updated_ && (step_ % run_.log_every() == 0 || last_); }

void Trainer::log_train(Run::Fields extra) {
  extra.emplace_back("epoch", epoch());
  const double mean_loss = interval_steps_ > 0 ? interval_loss_ / static_cast<double>(interval_steps_) : NAN;
  run_.log_train(step_, mean_loss, extra);
  interval_loss_ = 0.0;
  interval_steps_ = 0;
  for (auto& [name, sum] : interval_sums_) sum = 0.0;
}

double Trainer::interval_sum(const std::string& name) const {
  const auto it = interval_sums_.find(name);
  return it == interval_sums_.end() ? 0.0 : it->second;
}

bool Trainer::due_for_validation() {
  check(started_, "Trainer::due_for_validation: call start() first");
  // Step 0 is validated once, before training: a run resumed from its step-0
  // checkpoint logged it already.
  if (micro_batch_ > 0) return false;  // within an accumulated step
  const bool due = took_step_ ? step_ % options_.eval_every == 0 || last_ : step_ == 0 && !run_.resuming();
  if (!due) return false;
  // A checkpoint is good before it is saved: an update that overflowed (a
  // finite loss and gradient, an infinite parameter after the step) is never
  // saved over the last good checkpoint.
  if (const std::string bad = nonfinite_state(); !bad.empty()) {
    check(options_.skip_nonfinite, "after step {}, {} is not finite (an update overflowed); stopping without saving "
          "it: {} keeps the last good step (--skip-nonfinite goes back to it and trains on)", step_, bad,
          checkpoint_path_);
    restore_last_good(bad);
    return false;  // the restored model was validated when it was saved
  }
  if (group_.distributed()) check_replicas_agree();
  if (!group_.writer()) return false;  // rank 0 validates; the others wait for it at the next step's sums
  pause_.emplace(run_);
  return true;
}

void Trainer::validate(Evaluation valid) {
  check(pause_.has_value(), "Trainer::validate: call it when due_for_validation() says yes");
  const double epoch_now = epoch();
  valid.fields.emplace_back("epoch", epoch_now);
  run_.log_eval("valid", step_, valid.loss, valid.fields);
  if (valid.test) {
    valid.test->fields.emplace_back("epoch", epoch_now);
    run_.log_eval("test", step_, valid.test->loss, valid.test->fields);
  }
  if (!options_.best_metric.empty() && valid.score > best_score_) {
    best_score_ = valid.score;
    save(best_path_);
    run_.note(fmt::format("step {}: best validation {} so far, {:.2f}; kept in {}", step_, options_.best_metric,
                          valid.score, best_path_));
  }
  save(checkpoint_path_);
  pause_.reset();
}

bool Trainer::due_for_test() {
  check(stopped_, "Trainer::due_for_test: call it after the loop, when running() has said no");
  if (stopped_early_ || !group_.writer()) return false;
  if (!pause_) pause_.emplace(run_);
  return true;
}

void Trainer::log_test(const Scores& scores) { run_.log_eval("test", step_, scores.loss, scores.fields); }

double Trainer::epoch() const {
  const double batches = static_cast<double>(step_ * options_.accumulate_grad_batches);
  if (options_.batches_per_epoch > 0) return batches / options_.batches_per_epoch;
  if (cursor_ == nullptr || cursor_->batches_per_epoch() == 0) return 0.0;
  return batches / static_cast<double>(cursor_->batches_per_epoch());
}

// Every process must stop at the same step: rank 0's clock decides.
bool Trainer::out_of_time() const {
  if (options_.train_minutes <= 0) return false;
  const double over = group_.writer() && run_.train_seconds() >= options_.train_minutes * 60.0 ? 1.0 : 0.0;
  return group_.sum(over) > 0;
}

void Trainer::start_from_rank0() {
  if (!group_.distributed()) return;
  for (auto& [name, parameter] : model_.named_parameters()) group_.broadcast(parameter.value().span());
  for (auto& [name, buffer] : model_.named_buffers()) group_.broadcast(buffer.span());
}

void Trainer::save(const std::string& path) const {
  TrainingProgress progress;
  progress.step = step_;
  progress.epoch = cursor_ ? cursor_->epoch() : 0;
  progress.best_metric = best_score_;
  progress.train_seconds = run_.train_seconds();
  if (cursor_) progress.cursor = cursor_->state();
  progress.interval_loss = interval_loss_;
  progress.interval_steps = interval_steps_;
  progress.interval_sums = interval_sums_;
  progress.metrics_lines = run_.metrics_lines();
  Metadata metadata = progress_metadata(progress);
  metadata["config"] = run_.settings_json();
  if (!run_.program().empty()) metadata["program"] = run_.program();
  save_training_state(path, model_, optimizer_, metadata, generators_);
}

void Trainer::resume() {
  std::error_code ec;
  check(std::filesystem::exists(std::filesystem::symlink_status(checkpoint_path_, ec)), "--resume: the run in '{}' "
        "stopped before its first checkpoint ({} does not exist), so there is nothing to continue: --overwrite moves "
        "its files aside and starts afresh", run_.dir().string(), checkpoint_path_);
  const Checkpoint file = load_checkpoint(checkpoint_path_);
  check_training_state(file);
  // Another program's checkpoint is named as such before anything in it is
  // compared (one without the name: load_training_state names the first
  // parameter that differs).
  if (const auto it = file.metadata.find("program"); it != file.metadata.end() && !run_.program().empty())
    check(it->second == run_.program(), "checkpoint {} was written by another program, {}, not {}; resume it with "
          "{}, or choose another --out", checkpoint_path_, it->second, run_.program(), it->second);
  // The progress first: a file of other metadata is named before its tensors are compared.
  const TrainingProgress progress = read_training_progress(file.metadata, checkpoint_path_);
  check(progress.step <= options_.steps, "checkpoint {} is at step {}, beyond --steps {}: there is nothing left to "
        "train; give --steps {} or more to continue it", checkpoint_path_, progress.step, options_.steps,
        progress.step);
  if (const auto it = file.metadata.find("config"); it != file.metadata.end()) run_.compare_with_checkpoint(it->second);
  load_training_state(file, model_, optimizer_, generators_);
  if (const std::string bad = nonfinite_state(); !bad.empty())
    throw Error(fmt::format("checkpoint {}: {} holds a NaN or an infinity; it cannot be resumed", checkpoint_path_,
                            bad));
  check(!cursor_ || progress.cursor.has_value(), "checkpoint {}: no data cursor ('data_cursor') to resume from",
        checkpoint_path_);
  if (cursor_) cursor_->restore(*progress.cursor);
  step_ = progress.step;
  best_score_ = progress.best_metric;
  interval_loss_ = progress.interval_loss;
  interval_steps_ = progress.interval_steps;
  interval_sums_ = progress.interval_sums;
  resumed_metrics_lines_ = progress.metrics_lines;
  run_.note(fmt::format("resumed from {} at step {}", checkpoint_path_, step_));
}

// Every process must hold the same parameters after every step; a bug that
// breaks that would otherwise go unseen (only rank 0's are saved). At each
// validation, a checksum of their bits is compared across processes.
void Trainer::check_replicas_agree() const {
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
          step_, r);
}

std::string Trainer::nonfinite_state() {
  // x·0 is 0 for every finite x and NaN for ±Inf and NaN: one sum per tensor, vectorised.
  auto all_finite = [](const Tensor& t) {
    float sum = 0.0f;
    for (float v : t.span()) sum += v * 0.0f;
    return sum == 0.0f;
  };
  for (const auto& [name, parameter] : model_.named_parameters())
    if (!all_finite(parameter.value())) return "parameter " + name;
  for (const auto& [name, tensor] : optimizer_.named_state())
    if (!all_finite(tensor)) return "optimizer state " + name;
  return {};
}

void Trainer::restore_last_good(const std::string& what) {
  int64_t good_step = 0;
  if (group_.writer()) {  // rank 0 reads its checkpoint; under mpirun the others take its state
    const Checkpoint file = load_checkpoint(checkpoint_path_);
    good_step = read_training_progress(file.metadata, checkpoint_path_).step;
    load(model_, file);
    restore_tensors(file, "optim.", optimizer_.named_state());
  }
  if (group_.distributed()) {
    start_from_rank0();
    for (auto& [name, tensor] : optimizer_.named_state()) group_.broadcast(tensor.span());
  }
  run_.note(fmt::format("step {}: {} is not finite; the model and optimizer of step {} are restored from {} and "
                        "training goes on (--skip-nonfinite)", step_, what, good_step, checkpoint_path_));
}

int64_t Trainer::load_best() {
  check(!options_.best_metric.empty(), "Trainer::load_best: no best checkpoint is kept (set best_metric)");
  const Checkpoint file = load_checkpoint(best_path_);
  load(model_, file);
  return read_training_progress(file.metadata, best_path_).step;
}

}  // namespace rg
