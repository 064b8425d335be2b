#pragma once
// One optimizer step on the gradient of a loss: the part of the Trainer
// (trainer.h) that a benchmark times and a loop of one's own can call alone.
// The three parts, in order, as llm.c's main writes them:
//
//   zero_grad()     every parameter's gradient to 0
//   backward(loss)  loss.backward(), with the gradients summed over the
//                   processes of an MPI job while it runs (dist/gradient_reducer.h)
//   update(loss)    the gradients' norm and clip; the loss summed over the
//                   processes; the tape cleared (a value carried into the next
//                   step without detach() is then an error, not a silent cut
//                   in the gradient); then, when the loss and every gradient
//                   are finite, optimizer.step(clip factor), else no update
//
// take(loss) is the three at once.
#include <cstdint>
#include <string>

#include "rmsgrad/autograd/var.h"
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
  void backward(const Var& loss) { reducer_.backward(loss); }
  StepOutcome update(const Var& loss);
  StepOutcome take(const Var& loss) {
    zero_grad();
    backward(loss);
    return update(loss);
  }

  const dist::GradientReducer& reducer() const { return reducer_; }

 private:
  // Clips as the options say: per parameter in place, or globally as the
  // scale the optimizer's step applies (global_clip). The norm is the
  // gradients' (NaN/Inf if any is).
  GlobalClip clip_gradients();
  std::string nonfinite(double loss_value, double gradient_norm) const;

  Module& model_;
  Optimizer& optimizer_;
  ClipOptions clip_;
  dist::ProcessGroup& group_;
  dist::GradientReducer reducer_;
};

}  // namespace rg
