#include "autograd/tape.h"

#include <atomic>
#include <string_view>

#include "core/allocation_tags.h"
#include "core/error.h"

namespace rg {

namespace {
std::atomic<int64_t> g_next_id{1};

// The tag (core/allocation_tags.h) of a gradient buffer allocated for `node`.
const char* gradient_tag(const Node& node) {
  return std::string_view(node.op) == "leaf" ? "parameter gradients" : "gradients";
}
}  // namespace

Tensor& Node::grad_buffer() {
  ScopedAllocationTag tag(gradient_tag(*this));
  if (!grad.defined()) grad = Tensor::zeros(value.shape());
  if (grad_borrowed) {  // copy on first write
    grad = grad.clone();
    grad_borrowed = false;
  }
  return grad;
}

Tensor* Node::input_grad(size_t i) {
  Node& in = *inputs[i];
  return in.requires_grad ? &in.grad_buffer() : nullptr;
}

Tensor* Node::input_grad(size_t i, bool& assign) {
  Node& in = *inputs[i];
  assign = false;
  if (!in.requires_grad) return nullptr;
  if (!in.grad.defined()) {
    ScopedAllocationTag tag(gradient_tag(in));
    in.grad = Tensor::empty(in.value.shape());
    assign = true;
    return &in.grad;
  }
  return &in.grad_buffer();
}

Var::Var(Tensor value, bool requires_grad) : node_(std::make_shared<Node>()) {
  check(value.defined(), "Var: the value is an undefined tensor");
  node_->value = std::move(value);
  node_->requires_grad = requires_grad;
  node_->id = g_next_id++;
}

void Var::zero_grad() {
  if (node_->grad_borrowed) {
    node_->grad = Tensor::zeros(value().shape());
    node_->grad_borrowed = false;
  } else if (node_->grad.defined()) {
    node_->grad.fill(0.0f);
  }
}

void Var::backward() { Tape::current().backward(*this); }

Tape& Tape::current() {
  thread_local Tape tape;
  return tape;
}

Var Tape::record(const char* op, Tensor value, std::initializer_list<Var> inputs, BackwardFn backward) {
  return record(op, std::move(value), std::vector<Var>(inputs), std::move(backward));
}

Var Tape::record(const char* op, Tensor value, const std::vector<Var>& inputs, BackwardFn backward) {
  if (allocation_tracking()) claim_pending_blocks(op);  // what the forward allocated is this op's
  bool needs_grad = false;
  if (recording_)
    for (const Var& v : inputs) needs_grad = needs_grad || v.requires_grad();
  if (!needs_grad) return Var(std::move(value));

  auto node = std::make_shared<Node>();
  node->value = std::move(value);
  node->requires_grad = true;
  node->op = op;
  node->id = g_next_id++;
  node->inputs.reserve(inputs.size());
  for (const Var& v : inputs) node->inputs.push_back(v.node_ptr());
  node->backward = std::move(backward);
  nodes_.push_back(node);
  return Var(std::move(node));
}

void Tape::backward(const Var& loss) {
  check(loss.defined(), "backward: the loss is undefined");
  check(loss.numel() == 1, "backward: the loss must have one element, its shape is {}", loss.shape());
  run_backward(loss, Tensor::ones(loss.shape()), lean());
}

void Tape::backward(const Var& output, const Tensor& output_grad) { run_backward(output, output_grad, false); }

void Tape::run_backward(const Var& output, const Tensor& output_grad, bool release) {
  check(!released_,
        "backward: this tape's graph was released by an earlier backward from a loss; clear the tape "
        "and run the forward pass again");
  check(output.defined(), "backward: the output is undefined");
  check(output_grad.shape() == output.shape(), "backward: gradient shape {} differs from output shape {}",
        output_grad.shape(), output.shape());
  check(output.requires_grad(),
        "backward: the output does not depend on anything that requires a gradient "
        "(was it computed inside a NoGradGuard, or from constants only?)");
  Node& out = *output.node();
  if (out.grad.defined()) {
    out.grad_buffer().add_(output_grad);
  } else {  // adopt the caller's tensor; it is copied only if something adds into it
    out.grad = output_grad;
    out.grad_borrowed = true;
  }
  ScopedAllocationTag tag("backward workspace");
  for (size_t i = nodes_.size(); i-- > 0;) {
    Node& node = *nodes_[i];
    if (node.grad.defined() && node.backward) node.backward(node);  // else no gradient reached it
    if (release) release_passed(i);
  }
  released_ = release;
  // Intermediate gradients have done their job: release them, so a second
  // backward over the same tape propagates only its own seed (as PyTorch's
  // retain_graph does) and their memory returns before the tape is cleared.
  // Leaves (parameters, inputs) are not on the tape and keep theirs.
  for (const auto& node : nodes_) {
    node->grad = Tensor();
    node->grad_borrowed = false;
  }
}

// Node i's backward has run (or was skipped) and every node that used it
// comes later on the tape, so has run before it: nothing in this pass needs
// its gradient, its backward function (and the tensors that keeps), or its
// links to its inputs any more. Its value goes too unless someone outside
// the tape still holds the node (a Var the caller kept, such as the loss);
// the links are dropped first, so by the time the reverse loop reaches a
// node, the nodes that used it no longer count.
void Tape::release_passed(size_t i) {
  Node& node = *nodes_[i];
  node.backward = nullptr;
  node.inputs.clear();
  node.grad = Tensor();
  node.grad_borrowed = false;
  if (nodes_[i].use_count() == 1) node.value = Tensor();
}

void Tape::clear() {
  nodes_.clear();
  released_ = false;
}

std::string Tape::str() const {
  std::string out;
  for (const auto& node : nodes_) {
    out += fmt::format("#{} {} {} <-", node->id, node->op,
                       node->value.defined() ? node->value.shape().str() : std::string("(released)"));
    for (const auto& in : node->inputs)
      out += fmt::format(" #{}{}", in->id, in->op == std::string_view("leaf") ? "(leaf)" : "");
    out += "\n";
  }
  return out;
}

}  // namespace rg
