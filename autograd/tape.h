#pragma once
// The tape: every differentiable op appends its result node here, in creation
// order. Because an op's inputs always exist before it does, creation order is
// a topological order, and backward is a single loop over the tape in reverse.
//
// The tape does not own the nodes: it keeps weak references, and a node lives
// as long as a Var holds it or a later node uses it as an input. So a graph
// is freed when the last Var of it goes, as in PyTorch, and a training loop
// needs no clean-up call: forward, loss.backward(), optimizer step, repeat.
// Inside a NoGradGuard nothing is recorded and results carry no graph at all,
// which is what evaluation and optimizer updates want.
//
// Three mistakes are refused with an rg::Error instead of giving silently
// wrong gradients:
//   - backward() a second time through a graph the first one released;
//   - backward() from a loss recorded before tape().clear();
//   - an op whose input belongs to a released or cleared graph: a value
//     carried from one step into the next must go through detach().
//
// And one that may be meant is said once (core/error.h's warn): once any
// optimizer exists, a backward that gives a gradient to a trainable leaf that
// no optimizer updates names it. Such a leaf is not trained and its gradient
// grows every step; it is nearly always a module kept in a member but never
// passed to register_module, so it is not saved and train()/eval() miss it too.
//
// The tape is thread-local: each thread builds its own graphs.
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "rmsgrad/autograd/var.h"

namespace rg {

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
  // Nodes that no gradient reached are skipped (and left intact: another
  // loss may still use them). As soon as the reverse loop has passed a node,
  // its gradient, its backward function with everything it saved, and its
  // value (unless a Var outside holds it) are released, as PyTorch does
  // without retain_graph: the graph cannot be run backward again. Leaves keep
  // their gradients.
  void backward(const Var& loss);
  // The same, calling `ready(leaf)` for each leaf that needs a gradient (a
  // parameter) as soon as every recorded node that uses it has run: its
  // gradient for this pass is then final, while the pass goes on. A leaf that
  // no recorded node uses is not reported. Data-parallel training starts
  // summing gradients over processes there (dist/gradient_reducer.h).
  // `after_node()`, when given, runs after each node's backward: there the
  // reducer lets MPI move the sums already started (MPI progresses only
  // inside its own calls).
  using LeafReady = std::function<void(Node& leaf)>;
  void backward(const Var& loss, const LeafReady& ready, const std::function<void()>& after_node = {});
  // The same from a non-scalar output, seeded with d(something)/d(output).
  // This form keeps the graph (only intermediate gradients are released), so
  // it can be run again with another seed, as gradient checks do.
  void backward(const Var& output, const Tensor& output_grad);

  // Forgets every recorded node and starts a new recording. Not needed to
  // free memory; it marks a boundary: nothing recorded before it can be run
  // backward or used as an op's input afterwards.
  void clear();
  // The recorded nodes still alive.
  size_t size() const;
  // One line per live node: id, op, shape and input ids ("#3 matmul [4, 8] <- #1 #2").
  std::string str() const;

  bool recording() const { return recording_; }

 private:
  friend class NoGradGuard;
  void check_input(const Node& input, const char* op, size_t index) const;
  void check_output(const Node& output) const;
  void run_backward(const Var& output, const Tensor& output_grad, bool release, const LeafReady& ready = {},
                    const std::function<void()>& after_node = {});
  std::vector<std::shared_ptr<Node>> live_nodes() const;

  std::vector<std::weak_ptr<Node>> nodes_;      // creation order; expired ones are skipped
  size_t compact_at_ = kFirstCompaction;        // when nodes_ reaches this size, drop expired entries
  static constexpr size_t kFirstCompaction = 4096;
  uint64_t generation_ = 1;
  bool recording_ = true;
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

// An optimizer calls this for each leaf it updates (optim/optimizer.h); from
// the first call on, backward warns about trainable leaves that were never
// marked (see the top of this file). A program that reads a leaf's gradient
// itself (an input's, for a saliency map) sets leaf.node()->gradient_used.
void mark_optimized(const Var& leaf);

}  // namespace rg
