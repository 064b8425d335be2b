#pragma once
// Var: a value in the computation graph, with its gradient.
//
// A Var is a shared handle to a Node. A Node holds the forward value, the
// gradient (allocated on first use), the inputs it was computed from and a
// backward function. The backward function reads the node's gradient and
// ADDS its contribution into the gradients of the inputs: a value used twice
// receives two contributions. That accumulate rule is the only rule every
// backward obeys; nothing ever overwrites a gradient.
//
// Parameters are Vars created once with requires_grad = true. They live
// outside the tape, so their gradients persist (and accumulate) across
// steps until an optimizer zeroes them.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rmsgrad/core/tensor.h"

namespace rg {

struct Node;
using BackwardFn = std::function<void(Node&)>;

struct Node {
  Tensor value;
  Tensor grad;  // undefined until a gradient arrives
  bool requires_grad = false;
  // The gradient is a caller's tensor adopted without a copy (see
  // Tape::backward); it is copied before anything adds into it.
  bool grad_borrowed = false;
  const char* op = "leaf";
  int64_t id = 0;  // unique, increasing in creation order
  // The tape's recording this node belongs to (Tape::clear starts a new one);
  // 0 for leaves, which belong to no recording.
  uint64_t generation = 0;
  // A backward has passed this node and dropped what its backward needed:
  // no gradient can flow through it again.
  bool released = false;
  // For trainable leaves. `name` is what a module registered it under
  // ("weight"), for messages; `gradient_used` is set when an optimizer takes
  // the leaf or a gradient check reads its gradient, and `reported` once
  // backward has warned that nothing does (tape.h).
  std::string name;
  bool gradient_used = false;
  bool reported = false;
  std::vector<std::shared_ptr<Node>> inputs;
  BackwardFn backward;

  // The gradient buffer, zero-filled on first use.
  Tensor& grad_buffer();
  // Input i's gradient buffer if that input needs a gradient, else nullptr.
  // Backward functions call this and skip the work for inputs that need none.
  Tensor* input_grad(size_t i);
  // The same for kernels that can either assign or add. When input i had no
  // gradient yet, its buffer is allocated UNINITIALISED and `assign` is set:
  // the kernel must then write every element instead of adding, which saves
  // a zero-fill and a read of the whole buffer. Otherwise `assign` is false.
  Tensor* input_grad(size_t i, bool& assign);
};

class Var {
 public:
  Var() = default;
  // A leaf: a constant (requires_grad false) or a trainable value.
  explicit Var(Tensor value, bool requires_grad = false);
  explicit Var(std::shared_ptr<Node> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const Tensor& value() const { return node_->value; }
  Tensor& value() { return node_->value; }
  const Shape& shape() const { return node_->value.shape(); }
  int64_t dim(int axis) const { return shape()[axis]; }
  int rank() const { return shape().rank(); }
  int64_t numel() const { return shape().numel(); }
  float item() const { return value().item(); }
  bool requires_grad() const { return node_->requires_grad; }

  bool has_grad() const { return node_->grad.defined(); }
  // The gradient; zero-filled if none has arrived yet.
  Tensor& grad() { return node_->grad_buffer(); }
  void zero_grad();

  // Runs the tape's backward pass from this scalar.
  void backward();

  // The same values as a constant: no graph behind it, no gradient through it
  // (the storage is shared, not copied). What a recurrent state carried from
  // one training step into the next must go through (truncated
  // back-propagation through time).
  Var detach() const;

  Node* node() const { return node_.get(); }
  const std::shared_ptr<Node>& node_ptr() const { return node_; }

 private:
  std::shared_ptr<Node> node_;
};

// A Var's shape for an error message, formatted only on failure ("undefined"
// when the Var is; core/tensor.h).
inline ShapeOf shape_of(const Var& v) { return {v.defined() && v.value().defined() ? &v.value() : nullptr}; }

}  // namespace rg
