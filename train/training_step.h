#pragma once
// One optimizer step on the gradient of a loss: the part of the Trainer
// (trainer.h) that a benchmark times and a loop of one's own can call alone.
// The parts, in order, as llm.c's main writes them:
//
//   backward(loss)  loss.backward(), with the gradients summed over the
//                   processes of an MPI job while it runs (dist/gradient_reducer.h)
//   update(loss)    the gradients' norm and clip; the loss summed over the
//                   processes; the tape cleared (a value carried into the next
//                   step without detach() is then an error, not a silent cut
//                   in the gradient); then, when the loss and every gradient
//                   are finite, optimizer.step(clip factor), else no update;
//                   then every parameter's gradient back to 0
//
// take(loss) is the two at once.
//
// Under bf16 products (core/gemm.h), open_weight_cache() before a step's
// forward pass rounds each weight to bf16 once for that step's products
// (Bf16WeightCache) rather than at every product; update() closes it before
// the weights change. The Trainer opens it at every step. The gradients are zeroed after the update,
// not before the next backward: a gradient that a backward outside the step
// left (a check of one's own) is added into the next step's, never wiped, as
// in PyTorch's `loss.backward(); opt.step(); opt.zero_grad()`.
//
// Gradient accumulation: an optimizer step on k micro-batches. The first
// k − 1 go through accumulate(loss, k), which adds the gradient of loss/k
// and returns (no sum over the processes, as DDP's no_sync: one sum per
// optimizer step); the k-th through take(loss, k), which adds its loss/k,
// sums, clips and updates. The micro-batches' losses are means over n
// examples each, so the gradient is that of the mean over k·n, as one batch
// of k·n gives it to float rounding; the step's loss is their mean.
#include <cstdint>
#include <optional>
#include <string>

#include "rmsgrad/autograd/var.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/dist/gradient_reducer.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/optim/clip.h"
#include "rmsgrad/optim/optimizer.h"

namespace rg {

struct ClipOptions {
  double clip = 0.0;                // gradient norm clip (0: none)
  bool clip_per_parameter = false;  // clip each parameter's gradient on its own, not the global norm
};

struct StepOutcome {
  double loss = 0.0;           // the global batch's loss (summed over the processes)
  double gradient_norm = 0.0;  // before clipping
  std::string nonfinite = {};  // "" when the loss and the gradients are finite (and the update was made);
                               // otherwise what is not ("loss is NaN", "gradient of out.weight is not finite")
};

class TrainingStep {
 public:
  // `bucket_bytes`: under mpirun, gradients are summed this many bytes at a time.
  TrainingStep(Module& model, Optimizer& optimizer, ClipOptions clip,
               dist::ProcessGroup& group = dist::ProcessGroup::world(), int64_t bucket_bytes = dist::GradientReducer::kDefaultBucketBytes);

  void zero_grad() { optimizer_.zero_grad(); }
  // Under bf16 products: the model's weights in bf16 from here until update()
  // or close_weight_cache(); they must not change meanwhile. Under f32: nothing.
  void open_weight_cache();
  void close_weight_cache() { weight_cache_.reset(); }
  void backward(const Var& loss) { reducer_.backward(loss); }
  StepOutcome update(const Var& loss);
  StepOutcome take(const Var& loss) {
    backward(loss);
    return update(loss);
  }
  void accumulate(const Var& loss, int64_t micro_batches);
  StepOutcome take(const Var& loss, int64_t micro_batches);

  const dist::GradientReducer& reducer() const { return reducer_; }

 private:
  // Clips as the options say: per parameter in place, or globally as the
  // scale the optimizer's step applies (global_clip). The norm is the
  // gradients' (NaN/Inf if any is).
  GlobalClip clip_gradients();
  std::string nonfinite(double loss_value, double gradient_norm) const;
  StepOutcome finish(double local_loss);  // clip, sum the loss, update, zero the gradients

  Module& model_;
  Optimizer& optimizer_;
  ClipOptions clip_;
  dist::ProcessGroup& group_;
  dist::GradientReducer reducer_;
  double accumulated_loss_ = 0.0;  // this process's micro-batch losses so far in this step
  int64_t accumulated_ = 0;        // and how many
  std::optional<Bf16WeightCache> weight_cache_;
};

}  // namespace rg
