#pragma once
// Optimizer: the base of Adam and SGD.
//
// An optimizer updates NAMED parameters (Module::named_parameters(), the one
// source of truth), organised in parameter groups. Each group has its own
// hyperparameters (learning rate, betas, weight decay, ...), which the derived
// optimizer keeps in its options struct. A training step reads
//
//   optimizer.zero_grad();  loss.backward();  clip_grad_norm(...);  optimizer.step();
//
// step() updates every parameter that has a gradient; a parameter without one
// (no backward ever reached it) is skipped and its state is left untouched,
// as torch.optim skips parameters whose .grad is None.
// The optimizer marks its parameters, so that backward can name a trainable
// leaf that no optimizer updates (autograd/tape.h).
//
// State. Every parameter carries its own update count (torch's per-parameter
// "step", used by Adam's bias correction and SGD's first momentum step) and
// the derived optimizer's per-element buffers (Adam's m and v, SGD's
// momentum). Both are allocated lazily, at the parameter's first update.
// named_state() lists the state under stable names,
//
//   "<kind>.step"                  the optimizer's step counter (step() calls)
//   "<kind>.step.<param name>"     the parameter's update count
//   "<kind>.<buffer>.<param name>" a buffer, e.g. "adam.m.encoder.weight"
//
// The tensors it returns ARE the state (they alias it): saving them saves the
// optimizer, copying values into them (restore_tensors) restores it. Counters
// are float32 scalars, exact up to 2^24 = 16,777,216 steps; step() refuses to
// go further. named_state() allocates any state not yet allocated, as zeros:
// zero buffers with a zero update count are exactly a fresh state, so the list
// of names never depends on how far training got.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/autograd/var.h"
#include "rmsgrad/layers/module.h"

namespace rg {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// One parameter and its optimizer state.
struct ParameterSlot {
  std::string name;
  Var var;
  Tensor update_count;          // float32 scalar; undefined until the first update
  std::vector<Tensor> buffers;  // one per buffer name of the group; empty until the first update

  bool has_state() const { return update_count.defined(); }
  int64_t updates() const;  // 0 before the first update
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient, then counts the step.
  // With gradient_scale s, updates as if every gradient had first been
  // multiplied by s, and leaves the gradients as they are: the multiply of a
  // global-norm clip folded into the update's own pass over the gradients
  // (clip.h's global_clip), one pass over every gradient fewer per step.
  void step(float gradient_scale = 1.0f);
  // Zeroes the gradients of every parameter of every group.
  void zero_grad();
  // The number of step() calls so far (restored with the state).
  int64_t step_count() const;

  size_t group_count() const { return groups_.size(); }
  NamedParameters group_parameters(size_t group) const;
  NamedParameters named_parameters() const;  // every group, in order

  double lr(size_t group = 0) const;
  void set_lr(double lr);  // every group
  void set_lr(size_t group, double lr);

  // The state under its checkpoint names (see the header comment).
  NamedTensors named_state();
  const std::string& kind() const { return kind_; }

 protected:
  // kind prefixes the state names and error messages: "adam", "sgd".
  explicit Optimizer(std::string kind);

  // Validates the parameters (non-empty names, unique across every group, each
  // Var requiring a gradient and registered once) and appends a group whose
  // parameters carry the named per-element buffers. Returns the group index.
  size_t add_parameters(const NamedParameters& parameters, std::vector<std::string> buffer_names);
  // Throws unless group < group_count(); `what` names the caller.
  void check_group(size_t group, const char* what) const;

  // Updates one parameter, its gradient taken times gradient_scale(). Called
  // by step() for each parameter with a gradient, after its buffers exist and
  // its update count was incremented.
  virtual void update(size_t group, ParameterSlot& slot) = 0;
  // The gradient_scale of the step() in progress.
  float gradient_scale() const { return gradient_scale_; }
  // The group's learning rate lives in the derived options struct.
  virtual double group_lr(size_t group) const = 0;
  virtual void set_group_lr(size_t group, double lr) = 0;

 private:
  struct Group {
    std::vector<ParameterSlot> slots;
    std::vector<std::string> buffer_names;
  };
  void allocate_state(const Group& group, ParameterSlot& slot) const;

  std::string kind_;
  std::vector<Group> groups_;
  Tensor step_count_ = Tensor::scalar(0.0f);
  float gradient_scale_ = 1.0f;
};

// An optimizer whose groups each keep their hyperparameters in one Options
// struct with an `lr` (Adam's AdamOptions, Sgd's SgdOptions): the group
// bookkeeping both share.
template <class Options>
class OptimizerWithOptions : public Optimizer {
 public:
  const Options& options(size_t group = 0) const {
    check_group(group, "options");
    return options_[group];
  }

 protected:
  using Optimizer::Optimizer;

  // Appends a group (add_parameters) with its options, checked by the caller.
  size_t add_group_with(const NamedParameters& parameters, const Options& options,
                        std::vector<std::string> buffer_names) {
    const size_t group = add_parameters(parameters, std::move(buffer_names));
    options_.push_back(options);
    return group;
  }
  double group_lr(size_t group) const override { return options_[group].lr; }
  void set_group_lr(size_t group, double lr) override { options_[group].lr = lr; }

  std::vector<Options> options_;  // one per group
};

}  // namespace rg
