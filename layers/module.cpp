#include "rmsgrad/layers/module.h"

#include <cxxabi.h>

#include <cstdlib>

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

void Module::check_submodule_name(const std::string& name) { check_name(name); }

std::string Module::type_name(const std::type_info& type) {
  int status = 0;
  char* readable = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && readable != nullptr ? readable : type.name();
  std::free(readable);
  return name;
}

void Module::add_submodule(Submodule submodule) {
  check(submodule.get() != nullptr, "Module: submodule '{}' is null", submodule.name);
  for (const Submodule& other : submodules_)
    check(other.name != submodule.name, "Module: submodule '{}' registered twice", submodule.name);
  submodules_.push_back(std::move(submodule));
}

Module& Module::child(const Submodule& submodule, const std::string& prefix) const {
  Module* m = submodule.get();
  check(m != nullptr, "Module: the submodule '{}{}' is null (its member was set to nothing)", prefix, submodule.name);
  return *m;
}

void Module::collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Var>>& out) const {
  for (const auto& [name, v] : parameters_) out.emplace_back(prefix + name, v);
  for (const Submodule& s : submodules_) child(s, prefix).collect_parameters(prefix + s.name + ".", out);
}

void Module::collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, t] : buffers_) out.emplace_back(prefix + name, t);
  for (const Submodule& s : submodules_) child(s, prefix).collect_buffers(prefix + s.name + ".", out);
}

void Module::collect_generators(const std::string& prefix,
                                std::vector<std::pair<std::string, Generator*>>& out) const {
  for (const auto& [name, g] : generators_) out.emplace_back(prefix + name, g);
  for (const Submodule& s : submodules_) child(s, prefix).collect_generators(prefix + s.name + ".", out);
}

namespace {
// The names of a module's submodules, for messages: "embed_tokens, layers, norm" or "none".
std::string names_of(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace

Module& Module::get_submodule(const std::string& path) const {
  check(!path.empty(), "get_submodule: the path is empty");
  const Module* at = this;
  std::string walked;
  size_t from = 0;
  while (true) {
    const size_t dot = path.find('.', from);
    const std::string part = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    const Submodule* found = nullptr;
    std::vector<std::string> names;
    for (const Submodule& s : at->submodules_) {
      names.push_back(s.name);
      if (s.name == part) found = &s;
    }
    check(found != nullptr, "'{}': {} has no submodule '{}' (its submodules: {})", path,
          walked.empty() ? std::string("the model") : "'" + walked + "'", part, names_of(names));
    Module& next = at->child(*found, walked.empty() ? "" : walked + ".");
    walked += (walked.empty() ? "" : ".") + part;
    if (dot == std::string::npos) return next;
    at = &next;
    from = dot + 1;
  }
}

void Module::set_submodule(const std::string& path, std::shared_ptr<Module> module) {
  check(module != nullptr, "set_submodule('{}'): the new module is null", path);
  const size_t dot = path.rfind('.');
  Module& owner = dot == std::string::npos ? *this : get_submodule(path.substr(0, dot));
  const std::string name = dot == std::string::npos ? path : path.substr(dot + 1);
  for (Submodule& s : owner.submodules_) {
    if (s.name != name) continue;
    const std::string given = type_name(typeid(*module));
    module->train(owner.is_training());
    check(s.set(module), "set_submodule('{}'): the member there holds a {}; a {} is not one", path, s.type, given);
    return;
  }
  get_submodule(path);  // throws, naming what is there
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
  for (const Submodule& s : submodules_) child(s, "").train(on);
}

void Module::zero_grad() {
  for (auto& [_, v] : named_parameters()) v.zero_grad();
}

}  // namespace rg
