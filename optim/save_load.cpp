#include "rmsgrad/optim/save_load.h"

#include <sstream>

#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/save_load.h"

namespace rg {

namespace {
constexpr const char* kFormatKey = "format";
constexpr const char* kOptimizerFormat = "rmsgrad optimizer";
constexpr const char* kTrainingFormat = "rmsgrad training state";
const std::string kGeneratorPrefix = "generator.";  // + the module's name for it

void check_format(const Checkpoint& file, const char* expected) {
  auto it = file.metadata.find(kFormatKey);
  check(it != file.metadata.end() && it->second == expected, "{}: not an {} file (its format is '{}')", file.source,
        expected, it == file.metadata.end() ? std::string("unknown") : it->second);
}
}  // namespace

void save(Optimizer& optimizer, const std::string& path) {
  Checkpoint file;
  for (const auto& [name, t] : optimizer.named_state()) file.add(name, t);
  file.metadata[kFormatKey] = kOptimizerFormat;
  save_checkpoint(path, file);
}

void load(Optimizer& optimizer, const std::string& path) {
  Checkpoint file = load_checkpoint(path);
  check_format(file, kOptimizerFormat);
  restore_tensors(file, "", optimizer.named_state());
}

void add_training_tensors(Checkpoint& file, const Module& model, Optimizer& optimizer) {
  for (const auto& [name, v] : model.named_parameters()) file.add("param." + name, v.value());
  for (const auto& [name, t] : model.named_buffers()) file.add("buffer." + name, t);
  for (const auto& [name, t] : optimizer.named_state()) file.add("optim." + name, t);
}

void restore_training_tensors(const Checkpoint& file, Module& model, Optimizer& optimizer) {
  std::vector<std::pair<std::string, Tensor>> parameters;
  for (const auto& [name, v] : model.named_parameters()) parameters.emplace_back(name, v.value());
  restore_tensors(file, "param.", parameters);
  restore_tensors(file, "buffer.", model.named_buffers());
  restore_tensors(file, "optim.", optimizer.named_state());
}

void save_training_state(const std::string& path, const Module& model, Optimizer& optimizer,
                         const Metadata& metadata) {
  Checkpoint file;
  add_training_tensors(file, model, optimizer);
  file.metadata = metadata;
  check(!metadata.count(kFormatKey), "save_training_state: the metadata key '{}' is reserved", kFormatKey);
  file.metadata[kFormatKey] = kTrainingFormat;
  for (const auto& [name, gen] : model.named_generators()) {
    const std::string key = kGeneratorPrefix + name;
    check(!metadata.count(key), "save_training_state: the metadata key '{}' is reserved", key);
    file.metadata[key] = generator_state(*gen);
  }
  save_checkpoint(path, file);
}

Metadata load_training_state(const std::string& path, Module& model, Optimizer& optimizer) {
  Checkpoint file = load_checkpoint(path);
  check_format(file, kTrainingFormat);
  restore_training_tensors(file, model, optimizer);
  for (const auto& [name, gen] : model.named_generators()) {
    auto it = file.metadata.find(kGeneratorPrefix + name);
    check(it != file.metadata.end(), "{}: no state for the model's generator '{}'", file.source, name);
    restore_generator(*gen, it->second);
  }
  Metadata metadata;
  for (const auto& [key, value] : file.metadata)
    if (key != kFormatKey && key.rfind(kGeneratorPrefix, 0) != 0) metadata[key] = value;
  return metadata;
}

std::string generator_state(const Generator& gen) { return std::to_string(gen.seed()) + " " + std::to_string(gen.offset()); }

void restore_generator(Generator& gen, const std::string& state) {
  std::istringstream in(state);
  uint64_t seed = 0, offset = 0;
  std::string rest;
  check(static_cast<bool>(in >> seed >> offset) && !(in >> rest),
        "restore_generator: '{}' is not a generator state (two whole numbers, \"seed offset\")", state);
  gen.set_state(seed, offset);
}

}  // namespace rg
