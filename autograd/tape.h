#pragma once
// The tape: every differentiable op appends its result node here, in creation
// order. Because an op's inputs always exist before it does, creation order is
// a topological order, and backward is a single loop over the tape in reverse.
//
// Each training step records a fresh tape; Tape::clear() releases the nodes
// (and every intermediate tensor they hold) when the step is done. Inside a
// NoGradGuard nothing is recorded and results carry no graph at all, which
// is what evaluation and optimizer updates want.
//
// The tape is thread-local: each thread builds its own graphs.
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "autograd/var.h"

namespace rg {

// How much a step keeps alive. Lean (the default): backward(loss) releases,
// as soon as the reverse loop has passed a node, its gradient, its backward
// function with everything it saved, and its value (unless held outside the
// tape), as PyTorch does without retain_graph, so the graph cannot be run
// backward again before clear(); and the layers build the fused ops that
// save less (affine for Linear, add_tanh and weighted_sum for attention).
// BeforeIssue20: everything stays until clear(), only the intermediate
// gradients go at the end of the pass, and the layers build the composed
// ops; kept so the two can be timed against each other in one process.
enum class StepMemory { Lean, BeforeIssue20 };

class Tape {
 public:
  // The calling thread's tape.
  static Tape& current();

  // Appends the result of an op and returns it as a Var. When no input
  // requires a gradient (or recording is off) the result is a plain
  // constant: nothing is recorded and `backward` is dropped.
  Var record(const char* op, Tensor value, std::initializer_list<Var> inputs, BackwardFn backward);
  Var record(const char* op, Tensor value, const std::vector<Var>& inputs, BackwardFn backward);

  // Seeds d(loss)/d(loss) = 1 and runs every recorded backward in reverse.
  // Nodes that no gradient reached are skipped. Afterwards the gradients of
  // the recorded (intermediate) nodes are released; leaves keep theirs.
  // What else is released, and when, is set by set_step_memory.
  void backward(const Var& loss);
  // The same from a non-scalar output, seeded with d(something)/d(output).
  // This form keeps the graph (only intermediate gradients are released), so
  // it can be run again with another seed, as gradient checks do.
  void backward(const Var& output, const Tensor& output_grad);

  void set_step_memory(StepMemory mode) { step_memory_ = mode; }
  StepMemory step_memory() const { return step_memory_; }
  bool lean() const { return step_memory_ == StepMemory::Lean; }

  void clear();  // drop every recorded node
  size_t size() const { return nodes_.size(); }
  // One line per node: id, op, shape and input ids ("#3 matmul [4, 8] <- #1 #2").
  std::string str() const;

  bool recording() const { return recording_; }

 private:
  friend class NoGradGuard;
  void run_backward(const Var& output, const Tensor& output_grad, bool release);
  void release_passed(size_t i);
  std::vector<std::shared_ptr<Node>> nodes_;
  bool recording_ = true;
  StepMemory step_memory_ = StepMemory::Lean;
  bool released_ = false;  // a backward released the graph; only clear() may follow
};

// RAII: while alive, ops on this thread record nothing.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(Tape::current().recording_) { Tape::current().recording_ = false; }
  ~NoGradGuard() { Tape::current().recording_ = previous_; }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

inline Tape& tape() { return Tape::current(); }

}  // namespace rg
