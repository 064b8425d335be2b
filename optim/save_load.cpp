#include "rmsgrad/optim/save_load.h"

#include <charconv>
#include <fmt/format.h>
#include <set>

#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/save_load.h"

namespace rg {

namespace {
constexpr const char* kFormatKey = "format";
constexpr const char* kOptimizerFormat = "rmsgrad optimizer";
const std::string kGeneratorPrefix = "generator.";  // + the generator's name

void check_format(const Checkpoint& file, const char* expected) {
  auto it = file.metadata.find(kFormatKey);
  check(it != file.metadata.end() && it->second == expected, "{}: not an {} file (its format is '{}')", file.source,
        expected, it == file.metadata.end() ? std::string("unknown") : it->second);
}

// The model's own generators, then the others, by name; a name twice is an error.
NamedGenerators all_generators(const Module& model, const NamedGenerators& others) {
  NamedGenerators all = model.named_generators();
  all.insert(all.end(), others.begin(), others.end());
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      check(all[i].first != all[j].first, "training state: two generators named '{}' (the model's and another)",
            all[i].first);
  return all;
}

void add_training_tensors(Checkpoint& file, const Module& model, Optimizer& optimizer) {
  for (const auto& [name, v] : model.named_parameters()) file.add("param." + name, v.value());
  for (const auto& [name, t] : model.named_buffers()) file.add("buffer." + name, t);
  for (const auto& [name, t] : optimizer.named_state()) file.add("optim." + name, t);
}

// A training state of another model: its parameters have other names. The
// first that differs is named (the model's, in its order, then the file's),
// with how many differ, before shapes, buffers or generators are compared.
void check_same_parameter_names(const Checkpoint& file, const Module& model) {
  std::set<std::string> in_file, in_model;
  for (const auto& [name, t] : file.tensors)
    if (name.rfind("param.", 0) == 0) in_file.insert(name.substr(6));
  std::vector<std::string> lacking;  // the model's parameters that the file lacks, in the model's order
  for (const auto& [name, v] : model.named_parameters()) {
    in_model.insert(name);
    if (!in_file.count(name)) lacking.push_back(name);
  }
  std::vector<std::string> foreign;  // the file's parameters that the model lacks
  for (const auto& [name, t] : file.tensors)
    if (name.rfind("param.", 0) == 0 && !in_model.count(name.substr(6))) foreign.push_back(name.substr(6));
  if (lacking.empty() && foreign.empty()) return;
  const std::string first =
      !lacking.empty() ? fmt::format("the model's parameter '{}' is not in it{}", lacking[0],
                                     foreign.empty() ? "" : fmt::format(", which has '{}' instead", foreign[0]))
                       : fmt::format("its parameter '{}' is not the model's", foreign[0]);
  throw Error(fmt::format("checkpoint {} holds another model: first difference: {} ({} of the model's {} parameters "
                          "are not in the checkpoint, {} of its {} are not in the model)", file.source, first,
                          lacking.size(), in_model.size(), foreign.size(), in_file.size()));
}

void restore_training_tensors(const Checkpoint& file, Module& model, Optimizer& optimizer) {
  std::vector<std::pair<std::string, Tensor>> parameters;
  for (const auto& [name, v] : model.named_parameters()) parameters.emplace_back(name, v.value());
  restore_tensors(file, "param.", parameters);
  restore_tensors(file, "buffer.", model.named_buffers());
  restore_tensors(file, "optim.", optimizer.named_state());
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

void save_training_state(const std::string& path, const Module& model, Optimizer& optimizer,
                         const Metadata& metadata, const NamedGenerators& generators) {
  Checkpoint file;
  add_training_tensors(file, model, optimizer);
  file.metadata = metadata;
  check(!metadata.count(kFormatKey), "save_training_state: the metadata key '{}' is reserved", kFormatKey);
  file.metadata[kFormatKey] = kTrainingStateFormat;
  for (const auto& [name, gen] : all_generators(model, generators)) {
    const std::string key = kGeneratorPrefix + name;
    check(!metadata.count(key), "save_training_state: the metadata key '{}' is reserved", key);
    file.metadata[key] = generator_state(*gen);
  }
  save_checkpoint(path, file);
}

Metadata load_training_state(const std::string& path, Module& model, Optimizer& optimizer,
                             const NamedGenerators& generators) {
  return load_training_state(load_checkpoint(path), model, optimizer, generators);
}

Metadata load_training_state(const Checkpoint& file, Module& model, Optimizer& optimizer,
                             const NamedGenerators& generators) {
  check_training_state(file);
  const NamedGenerators all = all_generators(model, generators);
  // Every generator's position is read before anything is restored: a file
  // that lacks one leaves the model, the optimizer and the generators as they
  // were. A missing one is said after the parameters' names are compared: in
  // another model's file, the model is what differs.
  std::vector<std::pair<uint64_t, uint64_t>> positions;
  std::string missing;
  for (const auto& [name, gen] : all) {
    auto it = file.metadata.find(kGeneratorPrefix + name);
    if (it == file.metadata.end()) {
      if (missing.empty()) missing = name;
      positions.emplace_back();
      continue;
    }
    Generator parsed(0);
    try {
      restore_generator(parsed, it->second);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: metadata '{}': {}", file.source, it->first, e.what()));
    }
    positions.emplace_back(parsed.seed(), parsed.offset());
  }
  check_same_parameter_names(file, model);
  check(missing.empty(), "{}: no state for the generator '{}'", file.source, missing);
  restore_training_tensors(file, model, optimizer);
  for (size_t i = 0; i < all.size(); ++i) all[i].second->set_state(positions[i].first, positions[i].second);
  Metadata metadata;
  for (const auto& [key, value] : file.metadata)
    if (key != kFormatKey && key.rfind(kGeneratorPrefix, 0) != 0) metadata[key] = value;
  return metadata;
}

void check_training_state(const Checkpoint& file) {
  auto it = file.metadata.find(kFormatKey);
  if (it != file.metadata.end() && it->second == "rmsgrad training checkpoint 1")
    throw Error(fmt::format("{}: a checkpoint of an earlier version of the drivers (format 'rmsgrad training "
                            "checkpoint 1'), from before they wrote the library's training state; this version "
                            "cannot resume it: start the run afresh", file.source));
  check_format(file, kTrainingStateFormat);
}

std::string generator_state(const Generator& gen) { return std::to_string(gen.seed()) + " " + std::to_string(gen.offset()); }

void restore_generator(Generator& gen, const std::string& state) {
  // Exactly two decimal numbers and one space: "-1" or "0x10" is not a position.
  uint64_t seed = 0, offset = 0;
  const char* const end = state.data() + state.size();
  const auto [seed_end, seed_error] = std::from_chars(state.data(), end, seed);
  bool ok = seed_error == std::errc() && seed_end != end && *seed_end == ' ';
  if (ok) {
    const auto [offset_end, offset_error] = std::from_chars(seed_end + 1, end, offset);
    ok = offset_error == std::errc() && offset_end == end;
  }
  check(ok, "restore_generator: '{}' is not a generator state (two whole numbers, \"seed offset\")", state);
  gen.set_state(seed, offset);
}

}  // namespace rg
