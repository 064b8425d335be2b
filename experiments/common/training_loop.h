#pragma once
// The training loop every driver shares, and that a model of your own can
// use as it is. The loop owns everything that is not the model's: the steps,
// the optimizer update and gradient clipping, the finite-loss check, the
// tape, the progress bar, the train lines of metrics.jsonl (the mean loss of
// each --log-every interval), validation every `eval_every` steps and at the
// last one, the checkpoint and its resume, the best checkpoint, the clock,
// --stop-after, and the final test. A driver says only what is its own:
//
//   TrainingLoop loop(run, model, adam, {.steps = 1000, .eval_every = 100, .clip = 1.0});
//   loop.progress.cursor = &cursor;                          // restored on --resume
//   loop.progress.generators = {{"init", &init_gen}, {"noise", &noise_gen}};
//   loop.batch_loss = [&](int64_t step) {                    // forward one batch
//     Batch b = make_batch(data, cursor.next());
//     return model.loss(b.inputs, b.targets);
//   };
//   loop.validate = [&](int64_t step) {                      // the validation line
//     return Evaluation{.loss = valid_loss(model), .fields = {{"error_pct", error(model)}}};
//   };
//   loop.run();
//
// One step of the loop, as llm.c's main writes it:
//
//   loss = batch_loss(step + 1)        the driver's forward, on its next batch
//   zero_grad; loss.backward(); the gradients' norm (and clip factor)
//   clear the tape (a boundary: a value carried into the next step without
//   detach() is then an error, not a silent cut in the gradient)
//   check the loss and the gradients are finite; optimizer.step(clip factor)
//
// The files it writes in the run directory (run.h has the logs):
//   checkpoint.safetensors  after every validation: model, optimizer, progress
//   best.safetensors        the checkpoint with the best Evaluation::score so
//                           far, when TrainingOptions::best_metric names one
//
// Resuming (--resume) loads checkpoint.safetensors and continues from its
// step; at one thread the losses are then bit for bit those of a run that
// never stopped (training_checkpoint.h).
//
// Several processes (mpirun -np N; dist/): each runs this loop on its share
// of every global batch (dist/batch_share.h: batch_loss takes it and weights
// its loss by it). The loop starts from rank 0's parameters (broadcast),
// sums the gradients over the processes while backward runs
// (dist/gradient_reducer.h), clips and checks the summed gradients, and logs
// the global batch's loss, so every process takes the same step. Only rank 0
// validates, writes logs and checkpoints and runs the final test; the others
// wait for it at the next step's sums. A resumed run may have a different N.
// A train line's extra fields (train_fields) are rank 0's share of the batch.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "rmsgrad/autograd/var.h"
#include "rmsgrad/dist/gradient_reducer.h"
#include "rmsgrad/experiments/common/run.h"
#include "rmsgrad/experiments/common/training_progress.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/optim/clip.h"
#include "rmsgrad/optim/optimizer.h"

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
  double clip = 0.0;          // gradient norm clip (0: none)
  bool clip_per_parameter = false;  // clip each parameter's gradient on its own, not the global norm
  // A step whose loss or gradient is not finite stops the run (naming the
  // step and the first such parameter; the last checkpoint is kept). With
  // skip_nonfinite it is skipped instead — no update, as mixed-precision
  // trainers skip an overflowed step — and the run stops only after
  // kMaxSkippedInARow such steps in a row.
  bool skip_nonfinite = false;
  // Before each step the loop uses no more threads than other processes
  // leave cores free (core/polite_threads.h), noting each change in the log.
  // keep_threads holds --threads throughout: a 2-thread run then repeats bit
  // for bit however busy the machine is, and slows 2.5–3× beside a busy job.
  bool keep_threads = false;
  // Keep best.safetensors, the checkpoint with the highest Evaluation::score;
  // the name is how the log calls that score ("BLEU"). Empty: no best checkpoint.
  std::string best_metric = {};
  // Under mpirun: the size of the buckets in which gradients are summed over
  // the processes while backward runs (dist/gradient_reducer.h).
  double bucket_mb = 25.0;
};

// The loop's flags every driver has: --stop-after N (stop after step N as if
// interrupted, to test --resume), --skip-nonfinite and --bucket-mb.
void add_loop_flags(CLI::App& app, TrainingOptions& options);

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

class TrainingLoop {
 public:
  TrainingLoop(Run& run, Module& model, Optimizer& optimizer, TrainingOptions options);

  // ---- what the driver supplies ----
  // The loss of the batch for step `step` (1-based), forward only. Set the
  // learning rate here when it follows a schedule.
  std::function<Var(int64_t step)> batch_loss;
  // The validation at `step` (0 is the baseline before training). The clock is paused.
  std::function<Evaluation(int64_t step)> validate;
  // Extra fields of a train line, before "epoch" (e.g. the interval's error);
  // called once per line, so it can reset the driver's interval counters.
  std::function<Run::Fields()> train_fields;
  // The final test, after the last step (not after --stop-after); the clock
  // is paused. Call load_best() first to test the best checkpoint.
  std::function<void(int64_t step)> test;

  // Generators and the batch cursor to checkpoint; best_metric's best so far.
  TrainingProgress progress;

  // Resumes when the run does, then trains to options.steps (or stop_after,
  // or until train_minutes have passed).
  // Returns the step it stopped at.
  int64_t run();

  // Loads best.safetensors' parameters into the model; returns its step.
  int64_t load_best();

  // Fractional epochs at `step`: step ÷ the cursor's batches per epoch (0 without a cursor).
  double epoch_of(int64_t step) const;
  const TrainingOptions& options() const { return options_; }

 private:
  void validate_and_save(int64_t step);
  // "" when the step's loss and gradients are finite; otherwise what is not.
  std::string nonfinite(double loss_value, double gradient_norm) const;
  bool out_of_time() const;  // --train-minutes has passed (on rank 0)
  // Clips as the options say: per parameter in place, or globally as the
  // scale the optimizer's step applies (global_clip). The norm is the
  // gradients' (NaN/Inf if any is).
  GlobalClip clip_gradients();
  void resume();
  void start_from_rank0();  // every process takes rank 0's parameters and buffers
  void check_replicas_agree(int64_t step) const;

  Run& run_;
  Module& model_;
  Optimizer& optimizer_;
  TrainingOptions options_;
  std::string checkpoint_path_, best_path_;
  dist::ProcessGroup& group_;
  dist::GradientReducer reducer_;
};

}  // namespace rg
