#pragma once
// The Trainer: everything about training that is not the model's, as parts a
// driver calls from a loop of its own. The loop stays in the driver, where a
// reader sees it; the trainer never calls back into the driver:
//
//   Trainer trainer(run, model, adam, {.steps = 1000, .eval_every = 100, .clip = 1.0});
//   trainer.keep(cursor);                                // saved in the checkpoint, restored on --resume
//   trainer.keep("noise", noise_gen);
//   trainer.start();                                     // resumes, or validates the step-0 baseline next
//   if (trainer.due_for_validation()) trainer.validate(evaluate(model, valid));
//   while (trainer.running()) {
//     adam.set_lr(schedule.lr(trainer.next_step()));     // step numbers are 1-based
//     Batch b = make_batch(data, cursor.next());
//     trainer.step(model.loss(b.inputs, b.targets));
//     if (trainer.due_for_log()) trainer.log_train();
//     if (trainer.due_for_validation()) trainer.validate(evaluate(model, valid));
//   }
//   if (trainer.due_for_test()) trainer.log_test(evaluate(model, test));
//
// One step is a TrainingStep (training_step.h), as llm.c's main writes it:
// loss.backward() (summing the gradients over the processes while backward
// runs); the gradients' norm and clip factor; clear the tape; check the loss
// and the gradients are finite; optimizer.step(clip factor); zero the
// gradients. With accumulate_grad_batches = k, step() is called once per
// micro-batch and every k-th call makes the update; steps, clipping, the
// finite checks, logging, validation, checkpoints and resuming all count
// optimizer steps.
//
// Process-wide settings: a Trainer changes one only where an option below
// says so (precision, follow_free_cores); the thread count and the
// collective deadline are the Run's (RunOptions).
//
// The files it writes in the run directory (run.h has the logs):
//   checkpoint.safetensors  after every validation: a training state
//                           (optim/save_load.h) with the trainer's progress
//                           (step, epoch, clock, best score, the data cursor,
//                           every kept generator) and the run's settings
//   best.safetensors        the same, at the best Evaluation::score so far,
//                           when TrainingOptions::best_metric names one;
//                           rg::load(model, path) reads the model from either
//
// Resuming (--resume) loads checkpoint.safetensors and continues from its
// step; at one thread the losses are then bit for bit those of a run that
// never stopped.
//
// The clock: validation and the final test do not count as training time.
// From the moment due_for_validation() or due_for_test() answers yes until
// validate() or the trainer's end, the clock is paused.
//
// Several processes (mpirun -np N; dist/): each runs the same loop on its
// share of every global batch (dist/batch_share.h) and weights its loss by
// it. start() gives every process rank 0's parameters (broadcast); step()
// sums the gradients over the processes while backward runs
// (dist/gradient_reducer.h), clips and checks the summed gradients and logs
// the global batch's loss, so every process takes the same step. Only rank 0
// validates, writes logs and checkpoints and runs the final test:
// due_for_validation() and due_for_test() say no on the others, which wait
// for rank 0 in the next step's sums. A resumed run may have another N.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/optim/optimizer.h"
#include "rmsgrad/train/progress.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/training_step.h"

namespace rg {

struct TrainingOptions {
  int64_t steps = 1000;       // optimizer steps in all
  int64_t eval_every = 100;   // steps between validations (and one at the last step)
  int64_t stop_after = 0;     // stop after this step as if interrupted, with no final test (0: never)
  // A budget of training time (evaluation excluded, earlier runs included
  // when resumed): the first step that ends past it is the last one — it is
  // validated and the test runs, as after `steps` — unless `steps` comes
  // first. A schedule sized by `steps` is cut off where the budget ends.
  // 0: no budget.
  double train_minutes = 0.0;
  // The batches that make an epoch, for a program that draws its batches at
  // random instead of through a kept cursor (windows of a text): the train
  // lines' epoch is then steps / batches_per_epoch. 0: the cursor's count.
  double batches_per_epoch = 0.0;
  double clip = 0.0;          // gradient norm clip (0: none)
  bool clip_per_parameter = false;  // clip each parameter's gradient on its own, not the global norm
  // A step whose loss or gradient is not finite stops the run (naming the
  // step and the first such parameter; the last checkpoint is kept). With
  // skip_nonfinite it is skipped instead — no update, as mixed-precision
  // trainers skip an overflowed step — and the run stops only after
  // kMaxSkippedInARow such steps in a row.
  bool skip_nonfinite = false;
  // Gradient accumulation (Lightning's name): an optimizer step on the
  // gradients of this many calls of step(), each loss weighted 1/k, so that k
  // micro-batches of n examples train as one batch of k·n (training_step.h).
  int64_t accumulate_grad_batches = 1;
  // Between steps, use no more threads than other processes leave cores
  // free, and go back up when they are free (core/polite_threads.h); each
  // change is noted in the log. A process-wide setting (the thread count),
  // off by default: a run that follows the free cores repeats bit for bit
  // only when the machine is as busy as before, while one that does not
  // repeats bit for bit however busy the machine is (and slows 2.5–3× beside
  // a busy job on two cores).
  bool follow_free_cores = false;
  // When set, the precision of every matrix product and convolution of the
  // process from the Trainer's construction on (core/gemm.h's
  // set_product_precision): f32, or bf16 inputs with f32 sums. Weights,
  // optimizer state, norms, softmax and losses are f32 either way. Unset:
  // the process's precision as it is (f32 unless changed).
  std::optional<Precision> precision = {};
  // Keep best.safetensors, the checkpoint with the highest Evaluation::score;
  // the name is how the log calls that score ("BLEU"). Empty: no best checkpoint.
  std::string best_metric = {};
  // Under mpirun: the size of the buckets in which gradients are summed over
  // the processes while backward runs (dist/gradient_reducer.h).
  double bucket_mb = dist::GradientReducer::kDefaultBucketBytes / 1048576.0;
};

inline constexpr int kMaxSkippedInARow = 10;

// One line of metrics: a loss and the driver's own fields ({"bleu", 27.1}).
struct Scores {
  double loss = 0.0;
  Run::Fields fields = {};
};

// What one validation measured.
struct Evaluation {
  double loss = 0.0;
  Run::Fields fields = {};      // logged after the loss, before "epoch"
  double score = 0.0;           // higher is better; picks best.safetensors
  std::optional<Scores> test = {};  // logged as a test line at every validation (CIFAR-10's curves)
};

class Trainer {
 public:
  Trainer(Run& run, Module& model, Optimizer& optimizer, TrainingOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // What the checkpoint keeps besides the model and the optimizer, so that a
  // resumed run draws and reads what an uninterrupted one would: the data
  // cursor (a BatchCursor or a DataLoader) and the generators the model does
  // not own (the model's own, a Dropout's, are kept by the training state).
  // Call before start().
  void keep(ResumableCursor& cursor);
  void keep(const std::string& name, Generator& generator);

  // Resumes from checkpoint.safetensors when the run does (--resume), gives
  // every process rank 0's parameters, and starts the clock. Returns the
  // steps already taken: 0, or the checkpoint's step.
  int64_t start();

  // Whether another step is due: false after `steps`, after the step that
  // spent --train-minutes, and after --stop-after. Under bf16 products, a yes
  // rounds the weights to bf16 once for the step's products until its update
  // (TrainingStep::open_weight_cache): change no weight between running() and
  // step().
  bool running();
  int64_t steps_taken() const { return step_; }
  int64_t next_step() const { return step_ + 1; }  // the 1-based number of the step about to be taken

  // Backward of `loss`, and every accumulate_grad_batches-th call an
  // optimizer step (see the top of this file). A loss or gradient that is
  // not finite stops the run (rg::Error naming the step and what is not
  // finite), or with skip_nonfinite skips the update.
  void step(const Var& loss);

  // After an optimizer step: is a train line due (every log_every steps and
  // the last)? Says no after a call of step() that made no update.
  bool due_for_log() const;
  // The train line: the mean loss of the steps since the last one, then
  // `extra` (e.g. the interval's error rate), then the epoch.
  void log_train(Run::Fields extra = {});
  // A driver's own sum over the steps of the coming train line (CIFAR-10's
  // wrong answers), read back for `extra` and set to 0 by log_train. Kept in
  // every checkpoint, like the loss's, so that the first line after a resume
  // covers the same steps as the uninterrupted run's.
  void add_to_interval(const std::string& name, double value) { interval_sums_[name] += value; }
  double interval_sum(const std::string& name) const;

  // Is a validation due (step 0 of a fresh run, every eval_every steps, the
  // last step)? Says no on every process but rank 0. From a yes the clock
  // is paused until validate().
  bool due_for_validation();
  // Logs the validation (and its test line), keeps best.safetensors when the
  // score is the best so far, and writes checkpoint.safetensors.
  void validate(Evaluation evaluation);

  // After the loop: is the final test due (training ended at `steps` or
  // --train-minutes, not at --stop-after; rank 0 only)? From a yes the clock
  // is paused.
  bool due_for_test();
  void log_test(const Scores& scores);  // a test line at the last step
  // Loads best.safetensors' parameters into the model; returns its step.
  int64_t load_best();

  // Fractional epochs at the current step (0 without a kept cursor or batches_per_epoch).
  double epoch() const;
  const TrainingOptions& options() const { return options_; }

 private:
  bool out_of_time() const;  // --train-minutes has passed (on rank 0)
  // The first parameter or optimizer state that holds a NaN or ±Inf ("" when none).
  std::string nonfinite_state();
  // With skip_nonfinite: back to the model and optimizer of checkpoint.safetensors.
  void restore_last_good(const std::string& what);
  void resume();
  void save(const std::string& path) const;
  void start_from_rank0();  // every process takes rank 0's parameters and buffers
  void check_replicas_agree() const;

  Run& run_;
  Module& model_;
  Optimizer& optimizer_;
  TrainingOptions options_;
  std::string checkpoint_path_, best_path_;
  dist::ProcessGroup& group_;
  TrainingStep training_step_;
  ResumableCursor* cursor_ = nullptr;
  std::vector<std::pair<std::string, Generator*>> generators_;

  bool started_ = false;
  int64_t step_ = 0;
  double best_score_;
  bool budget_spent_ = false;  // resumed after --train-minutes ran out: nothing to train
  bool last_ = false;          // the step just taken is the last one (steps or the budget)
  bool took_step_ = false;     // this process has taken a step
  bool just_updated_ = false;  // the last call of step() made an optimizer step
  int64_t micro_batch_ = 0;    // micro-batches of the optimizer step under way
  FreeCoreFollower free_cores_;
  bool stopped_ = false;       // running() has said no
  bool stopped_early_ = false; // by --stop-after: no final test
  int skipped_in_a_row_ = 0;
  double interval_loss_ = 0.0;
  int64_t interval_steps_ = 0;
  std::map<std::string, double> interval_sums_;
  std::optional<int64_t> resumed_metrics_lines_;  // the checkpoint's TrainingProgress::metrics_lines
  std::unique_ptr<ProgressBar> bar_;
  std::optional<Run::ClockPause> pause_;  // while validating or testing
};

}  // namespace rg
