#include "rmsgrad/optim/optimizer.h"

#include <cmath>
#include <map>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"

namespace rg {

namespace {

// float32 counts every integer up to 2^24 exactly; one more and n + 1 == n.
constexpr int64_t kMaxExactCount = int64_t{1} << 24;

// Reads a float32 counter, which a restore may have overwritten with anything.
int64_t read_count(const Tensor& counter, const std::string& kind, const std::string& what) {
  const float value = counter.item();
  check(value >= 0.0f && value <= static_cast<float>(kMaxExactCount) && std::floor(value) == value,
        "{}: {} holds {}, not a step count in [0, 2^24] (a damaged checkpoint?)", kind, what, value);
  return static_cast<int64_t>(value);
}

}  // namespace

int64_t ParameterSlot::updates() const {
  return has_state() ? read_count(update_count, "optimizer", "the update count of '" + name + "'") : 0;
}

Optimizer::Optimizer(std::string kind) : kind_(std::move(kind)) {}

size_t Optimizer::add_parameters(const NamedParameters& parameters, std::vector<std::string> buffer_names) {
  const size_t group_index = groups_.size();
  check(!parameters.empty(), "{}: group {} has no parameters", kind_, group_index);
  // Where every name and every Var already lives: (group, name).
  std::map<std::string, size_t> group_of_name;
  std::map<const Node*, std::pair<size_t, std::string>> owner_of_var;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (const ParameterSlot& slot : groups_[g].slots) {
      group_of_name[slot.name] = g;
      owner_of_var[slot.var.node()] = {g, slot.name};
    }
  }
  for (const auto& [name, var] : parameters) {
    check(!name.empty(), "{}: group {} has a parameter with an empty name", kind_, group_index);
    check(var.defined(), "{}: parameter '{}' is an undefined Var", kind_, name);
    check(var.requires_grad(), "{}: parameter '{}' does not require a gradient (a constant?)", kind_, name);
    if (auto it = group_of_name.find(name); it != group_of_name.end()) {
      if (it->second == group_index)
        check(false, "{}: duplicate parameter name '{}' in group {}", kind_, name, group_index);
      check(false, "{}: duplicate parameter name '{}': already in group {}, again in group {}", kind_, name,
            it->second, group_index);
    }
    if (auto it = owner_of_var.find(var.node()); it != owner_of_var.end())
      check(false, "{}: parameter '{}' (group {}) is the same Var as '{}' (group {}); each Var may be registered once",
            kind_, name, group_index, it->second.second, it->second.first);
    group_of_name[name] = group_index;
    owner_of_var[var.node()] = {group_index, name};
  }

  Group group;
  group.buffer_names = std::move(buffer_names);
  for (const auto& [name, var] : parameters) {
    group.slots.push_back(ParameterSlot{name, var, Tensor(), {}});
    mark_optimized(var);
  }
  groups_.push_back(std::move(group));
  return group_index;
}

void Optimizer::check_group(size_t group, const char* what) const {
  check(group < groups_.size(), "{}: {}: no group {} (the optimizer has {})", kind_, what, group, groups_.size());
}

void Optimizer::allocate_state(const Group& group, ParameterSlot& slot) const {
  if (slot.has_state()) return;
  slot.buffers.clear();
  for (size_t b = 0; b < group.buffer_names.size(); ++b) slot.buffers.push_back(Tensor::zeros(slot.var.shape()));
  slot.update_count = Tensor::scalar(0.0f);
}

void Optimizer::step(float gradient_scale) {
  const int64_t steps = step_count();
  check(steps < kMaxExactCount, "{}: {} steps: the float32 step counters cannot count further exactly", kind_,
        steps);
  check(std::isfinite(gradient_scale) && gradient_scale > 0.0f, "{}: step: gradient_scale must be finite and > 0, "
        "got {}", kind_, gradient_scale);
  gradient_scale_ = gradient_scale;
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (ParameterSlot& slot : groups_[g].slots) {
      if (!slot.var.has_grad()) continue;  // no backward reached it: leave it and its state alone
      allocate_state(groups_[g], slot);
      check(slot.var.grad().shape() == slot.var.shape(), "{}: parameter '{}' has shape {} but its gradient {}",
            kind_, slot.name, slot.var.shape(), slot.var.grad().shape());
      const int64_t updates = slot.updates();
      check(updates < kMaxExactCount, "{}: parameter '{}' had {} updates: its counter cannot count further", kind_,
            slot.name, updates);
      slot.update_count.data()[0] = static_cast<float>(updates + 1);
      update(g, slot);
    }
  }
  step_count_.data()[0] = static_cast<float>(steps + 1);
}

void Optimizer::zero_grad() {
  for (Group& group : groups_)
    for (ParameterSlot& slot : group.slots) slot.var.zero_grad();
}

int64_t Optimizer::step_count() const { return read_count(step_count_, kind_, "the step counter"); }

NamedParameters Optimizer::group_parameters(size_t group) const {
  check_group(group, "group_parameters");
  NamedParameters out;
  for (const ParameterSlot& slot : groups_[group].slots) out.emplace_back(slot.name, slot.var);
  return out;
}

NamedParameters Optimizer::named_parameters() const {
  NamedParameters out;
  for (size_t g = 0; g < groups_.size(); ++g)
    for (auto& named : group_parameters(g)) out.push_back(std::move(named));
  return out;
}

double Optimizer::lr(size_t group) const {
  check_group(group, "lr");
  return group_lr(group);
}

void Optimizer::set_lr(double lr) {
  for (size_t g = 0; g < groups_.size(); ++g) set_lr(g, lr);
}

void Optimizer::set_lr(size_t group, double lr) {
  check_group(group, "set_lr");
  check(std::isfinite(lr) && lr >= 0.0, "{}: group {}: lr must be finite and >= 0, got {}", kind_, group, lr);
  set_group_lr(group, lr);
}

NamedTensors Optimizer::named_state() {
  NamedTensors out;
  out.emplace_back(kind_ + ".step", step_count_);
  for (Group& group : groups_) {
    for (ParameterSlot& slot : group.slots) {
      allocate_state(group, slot);
      out.emplace_back(kind_ + ".step." + slot.name, slot.update_count);
      for (size_t b = 0; b < group.buffer_names.size(); ++b)
        out.emplace_back(kind_ + "." + group.buffer_names[b] + "." + slot.name, slot.buffers[b]);
    }
  }
  return out;
}

}  // namespace rg
