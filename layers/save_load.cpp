#include "rmsgrad/layers/save_load.h"

#include "rmsgrad/core/error.h"

namespace rg {

namespace {
constexpr const char* kFormat = "rmsgrad module";
}  // namespace

std::vector<std::pair<std::string, Tensor>> module_tensors(const Module& module) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, v] : module.named_parameters()) out.emplace_back(name, v.value());
  for (const auto& [name, t] : module.named_buffers()) {
    for (const auto& [other, _] : out)
      check(other != name, "save: the module has a parameter and a buffer both named '{}'", name);
    out.emplace_back(name, t);
  }
  return out;
}

void save(const Module& module, const std::string& path) {
  Checkpoint file;
  for (const auto& [name, t] : module_tensors(module)) file.add(name, t);
  file.metadata["format"] = kFormat;
  save_checkpoint(path, file);
}

void load(Module& module, const std::string& path) {
  Checkpoint file = load_checkpoint(path);
  // restore_tensors checks every name and shape before it copies anything.
  restore_tensors(file, "", module_tensors(module));
}

}  // namespace rg
