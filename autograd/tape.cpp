#include "rmsgrad/autograd/tape.h"

#include <algorithm>
#include <atomic>
#include <string_view>
#include <unordered_map>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/observer.h"

namespace rg {

namespace {
std::atomic<int64_t> g_next_id{1};
std::atomic<bool> g_optimizer_exists{false};

// What a gradient buffer allocated for `node` is, for an observer (core/observer.h).
const char* gradient_scope(const Node& node) {
  return std::string_view(node.op) == "leaf" ? "parameter gradients" : "gradients";
}
// One message for the leaves one backward found.
void warn_unoptimized(const std::vector<Node*>& leaves) {
  std::string names;
  for (const Node* leaf : leaves)
    names += fmt::format("{}{} {}", names.empty() ? "" : ", ", leaf->name.empty() ? "a leaf" : "'" + leaf->name + "'",
                         leaf->value.shape());
  warn(fmt::format(
      "backward gave a gradient to {} trainable {} that no optimizer updates: {}. {} not trained, and {} "
      "gradient grows every step. A module kept in a member must be registered (register_module), a "
      "parameter made by hand passed to the optimizer, and a value meant to stay fixed made a constant "
      "(constant(t), or x.detach())",
      leaves.size(), leaves.size() == 1 ? "leaf" : "leaves", names, leaves.size() == 1 ? "It is" : "They are",
      leaves.size() == 1 ? "its" : "their"));
}
}  // namespace

Tensor& Node::grad_buffer() {
  ObserverScope scope(gradient_scope(*this));
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
    ObserverScope scope(gradient_scope(in));
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

void mark_optimized(const Var& leaf) {
  leaf.node()->gradient_used = true;
  g_optimizer_exists.store(true, std::memory_order_relaxed);
}

void Var::backward() { Tape::current().backward(*this); }

Var Var::detach() const {
  check(defined(), "detach: the Var is undefined");
  return Var(node_->value, false);
}

Tape& Tape::current() {
  thread_local Tape tape;
  return tape;
}

Var Tape::record(const char* op, Tensor value, std::initializer_list<Var> inputs, BackwardFn backward) {
  return record(op, std::move(value), std::vector<Var>(inputs), std::move(backward));
}

// A recorded input must come from the current recording and still have its
// graph; otherwise the gradient that this op would send into it could never
// reach the parameters behind it.
void Tape::check_input(const Node& input, const char* op, size_t index) const {
  if (input.generation == 0) return;  // a leaf: a parameter or a constant
  check(!input.released,
        "{}: input {} (#{} {}) belongs to a graph that an earlier backward released. To use a value "
        "after backward (to log it, or to carry it into the next step), take x.detach() (a constant "
        "with the same values, no graph), compute inside a NoGradGuard, or read x.item() / x.value()",
        op, index, input.id, input.op);
  check(input.generation == generation_,
        "{}: input {} (#{} {}) was recorded before tape().clear(); a value carried across the clear "
        "must go through detach()",
        op, index, input.id, input.op);
}

Var Tape::record(const char* op, Tensor value, const std::vector<Var>& inputs, BackwardFn backward) {
  if (Observer* observer = installed_observer()) observer->op_recorded(op);
  bool needs_grad = false;
  if (recording_)
    for (const Var& v : inputs) needs_grad = needs_grad || v.requires_grad();
  if (!needs_grad) return Var(std::move(value));

  for (size_t i = 0; i < inputs.size(); ++i) check_input(*inputs[i].node(), op, i);
  auto node = std::make_shared<Node>();
  node->value = std::move(value);
  node->requires_grad = true;
  node->op = op;
  node->id = g_next_id++;
  node->generation = generation_;
  node->inputs.reserve(inputs.size());
  for (const Var& v : inputs) node->inputs.push_back(v.node_ptr());
  node->backward = std::move(backward);

  // The references of graphs that are gone are dropped now and then, each
  // time the list has doubled: amortised constant work per op.
  if (nodes_.size() >= compact_at_) {
    std::erase_if(nodes_, [](const std::weak_ptr<Node>& n) { return n.expired(); });
    compact_at_ = std::max(kFirstCompaction, 2 * nodes_.size());
  }
  nodes_.push_back(node);
  return Var(std::move(node));
}

std::vector<std::shared_ptr<Node>> Tape::live_nodes() const {
  std::vector<std::shared_ptr<Node>> live;
  live.reserve(nodes_.size());
  for (const auto& weak : nodes_)
    if (auto node = weak.lock()) live.push_back(std::move(node));
  return live;
}

void Tape::check_output(const Node& output) const {
  check(!output.released,
        "backward: this graph was already run backward, and that pass released it (as PyTorch does "
        "without retain_graph); run the forward pass again, or add the losses and call backward once");
  check(output.generation == 0 || output.generation == generation_,
        "backward: the loss was recorded before tape().clear(), so its graph is gone and no gradient "
        "would reach the parameters; call clear() after backward, or not at all");
}

void Tape::backward(const Var& loss) { backward(loss, LeafReady{}); }

void Tape::backward(const Var& loss, const LeafReady& ready, const std::function<void()>& after_node) {
  check(loss.defined(), "backward: the loss is undefined");
  check(loss.numel() == 1, "backward: the loss must have one element, its shape is {}", loss.shape());
  run_backward(loss, Tensor::ones(loss.shape()), true, ready, after_node);
}

void Tape::backward(const Var& output, const Tensor& output_grad) { run_backward(output, output_grad, false); }

void Tape::run_backward(const Var& output, const Tensor& output_grad, bool release, const LeafReady& ready,
                        const std::function<void()>& after_node) {
  check(output.defined(), "backward: the output is undefined");
  check(output_grad.shape() == output.shape(), "backward: gradient shape {} differs from output shape {}",
        output_grad.shape(), output.shape());
  check(output.requires_grad(),
        "backward: the output does not depend on anything that requires a gradient "
        "(was it computed inside a NoGradGuard, or from constants only?)");
  check_output(*output.node());
  Node& out = *output.node();
  if (out.grad.defined()) {
    out.grad_buffer().add_(output_grad);
  } else {  // adopt the caller's tensor; it is copied only if something adds into it
    out.grad = output_grad;
    out.grad_borrowed = true;
  }
  // Held for the pass: a node whose consumers were released must survive
  // until the loop reaches it and passes its gradient on.
  std::vector<std::shared_ptr<Node>> graph = live_nodes();
  // Intermediate gradients have done their job when the pass ends (or
  // stops on an error): release them, so a second backward over the same
  // graph propagates only its own seed (as PyTorch's retain_graph does).
  // Leaves (parameters, inputs) are not on the tape and keep theirs.
  struct ReleaseGradients {
    std::vector<std::shared_ptr<Node>>& graph;
    ~ReleaseGradients() {
      for (const auto& node : graph) {
        node->grad = Tensor();
        node->grad_borrowed = false;
      }
    }
  } release_gradients{graph};
  // With a `ready` hook: how many recorded inputs of the pass each
  // trainable leaf still waits for. The loop runs in reverse creation order,
  // so a leaf is done when the loop has passed its first user.
  std::unordered_map<Node*, int> waiting_for;
  if (ready)
    for (const auto& node : graph)
      for (const auto& input : node->inputs)
        if (input->generation == 0 && input->requires_grad) ++waiting_for[input.get()];
  auto passed = [&](Node& node) {
    if (!ready) return;
    for (const auto& input : node.inputs)
      if (input->generation == 0 && input->requires_grad && --waiting_for[input.get()] == 0) ready(*input);
  };
  // Trainable leaves that no optimizer updates, found on the way (see tape.h).
  const bool look_for_unoptimized = g_optimizer_exists.load(std::memory_order_relaxed);
  std::vector<Node*> unoptimized;
  ObserverScope scope("backward workspace");
  for (size_t i = graph.size(); i-- > 0;) {
    Node& node = *graph[i];
    if (!node.grad.defined()) {  // no gradient reached it: not part of this loss's graph
      passed(node);
      continue;
    }
    check(!node.released,
          "backward: the gradient reached #{} {}, which an earlier backward released (as PyTorch does "
          "without retain_graph); add the losses and call backward once",
          node.id, node.op);
    if (node.backward) node.backward(node);
    if (Observer* observer = installed_observer()) observer->backward_ran(node.op);
    if (look_for_unoptimized)
      for (const auto& input : node.inputs)
        if (input->generation == 0 && input->requires_grad && !input->gradient_used && !input->reported) {
          input->reported = true;
          unoptimized.push_back(input.get());
        }
    passed(node);
    if (after_node) after_node();
    if (release) {
      // Every node that used this one comes later on the tape, so has run:
      // nothing in this pass needs its backward function (and the tensors
      // that keeps), its links to its inputs or its gradient any more. Its
      // value goes too unless someone outside the pass still holds the node
      // (a Var the caller kept, such as the loss); the links are dropped
      // first, so by the time the loop reaches a node, the nodes that used
      // it no longer count.
      node.backward = nullptr;
      node.inputs.clear();
      node.grad = Tensor();
      node.grad_borrowed = false;
      node.released = true;
      if (graph[i].use_count() == 1) node.value = Tensor();
    }
  }
  if (!unoptimized.empty()) warn_unoptimized(unoptimized);
}

void Tape::clear() {
  nodes_.clear();
  compact_at_ = kFirstCompaction;
  ++generation_;
}

size_t Tape::size() const {
  return static_cast<size_t>(std::count_if(nodes_.begin(), nodes_.end(), [](const auto& n) { return !n.expired(); }));
}

std::string Tape::str() const {
  std::string out;
  for (const auto& node : live_nodes()) {
    out += fmt::format("#{} {} {} <-", node->id, node->op,
                       node->value.defined() ? node->value.shape().str() : std::string("(released)"));
    for (const auto& in : node->inputs)
      out += fmt::format(" #{}{}", in->id, in->op == std::string_view("leaf") ? "(leaf)" : "");
    out += "\n";
  }
  return out;
}

}  // namespace rg
