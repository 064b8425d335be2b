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

void save(const Module& module, const std::string& path, const Metadata& metadata) {
  check(!metadata.contains("format"), "save: '{}': \"format\" is the file's own metadata key; name yours otherwise",
        path);
  Checkpoint file;
  for (const auto& [name, t] : module_tensors(module)) file.add(name, t);
  file.metadata = metadata;
  file.metadata["format"] = kFormat;
  save_checkpoint(path, file);
}

Metadata load(Module& module, const std::string& path) { return load(module, load_checkpoint(path)); }

Metadata load(Module& module, const Checkpoint& file) {
  Metadata metadata = file.metadata;
  metadata.erase("format");
  // restore_tensors checks every name and shape before it copies anything.
  const auto format = file.metadata.find("format");
  if (format == file.metadata.end() || format->second == kFormat) {
    restore_tensors(file, "", module_tensors(module));
    return metadata;
  }
  // A training state (optim/save_load.h) holds the model as "param.<name>"
  // and "buffer.<name>" beside the optimizer's tensors.
  check(format->second == "rmsgrad training state", "{}: holds no module of this program (its format is '{}')",
        file.source, format->second);
  std::vector<std::pair<std::string, Tensor>> parameters;
  for (const auto& [name, v] : module.named_parameters()) parameters.emplace_back(name, v.value());
  restore_tensors(file, "param.", parameters);
  restore_tensors(file, "buffer.", module.named_buffers());
  return metadata;
}

}  // namespace rg
