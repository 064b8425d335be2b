#include "rmsgrad/layers/module.h"

#include "rmsgrad/core/error.h"

namespace rg {

namespace {
void check_name(const std::string& name) {
  check(!name.empty() && name.find('.') == std::string::npos,
        "Module: invalid name '{}' (must be non-empty and contain no '.')", name);
}
}  // namespace

Var Module::register_parameter(const std::string& name, Tensor value) {
  check_name(name);
  for (const auto& [n, _] : parameters_) check(n != name, "Module: parameter '{}' registered twice", name);
  Var v(std::move(value), true);
  v.node()->name = name;  // for the tape's messages
  parameters_.emplace_back(name, v);
  return v;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
  check_name(name);
  for (const auto& [n, _] : buffers_) check(n != name, "Module: buffer '{}' registered twice", name);
  buffers_.emplace_back(name, value);
  return value;  // shares storage with the registered buffer
}

void Module::register_generator(const std::string& name, Generator& generator) {
  check_name(name);
  for (const auto& [n, _] : generators_) check(n != name, "Module: generator '{}' registered twice", name);
  generators_.emplace_back(name, &generator);
}

void Module::add_submodule(const std::string& name, std::shared_ptr<Module> module) {
  check_name(name);
  check(module != nullptr, "Module: submodule '{}' is null", name);
  for (const auto& [n, _] : submodules_) check(n != name, "Module: submodule '{}' registered twice", name);
  submodules_.emplace_back(name, std::move(module));
}

void Module::collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Var>>& out) const {
  for (const auto& [name, v] : parameters_) out.emplace_back(prefix + name, v);
  for (const auto& [name, m] : submodules_) m->collect_parameters(prefix + name + ".", out);
}

void Module::collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, t] : buffers_) out.emplace_back(prefix + name, t);
  for (const auto& [name, m] : submodules_) m->collect_buffers(prefix + name + ".", out);
}

void Module::collect_generators(const std::string& prefix,
                                std::vector<std::pair<std::string, Generator*>>& out) const {
  for (const auto& [name, g] : generators_) out.emplace_back(prefix + name, g);
  for (const auto& [name, m] : submodules_) m->collect_generators(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Generator*>> Module::named_generators() const {
  std::vector<std::pair<std::string, Generator*>> out;
  collect_generators("", out);
  return out;
}

std::vector<std::pair<std::string, Var>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Var>> out;
  collect_parameters("", out);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_buffers("", out);
  return out;
}

std::vector<Var> Module::parameters() const {
  std::vector<Var> out;
  for (auto& [_, v] : named_parameters()) out.push_back(v);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const auto& [_, v] : named_parameters()) n += v.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, m] : submodules_) m->train(on);
}

void Module::zero_grad() {
  for (auto& [_, v] : named_parameters()) v.zero_grad();
}

}  // namespace rg
