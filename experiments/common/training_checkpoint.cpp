#include "experiments/common/training_checkpoint.h"

#include "core/error.h"
#include "experiments/common/checkpoint.h"

namespace rg {

namespace {

std::vector<std::pair<std::string, Tensor>> parameter_values(const Module& model) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, v] : model.named_parameters()) out.emplace_back(name, v.value());
  return out;
}

int64_t parse_int(const Checkpoint& c, const std::string& key) {
  const std::string& text = c.meta(key);
  try {
    size_t used = 0;
    int64_t v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error(fmt::format("checkpoint {}: metadata '{}' = '{}' is not an integer", c.source, key, text));
}

}  // namespace

void save_training_checkpoint(const std::string& path, const Module& model, Optimizer& optimizer,
                              const TrainingProgress& progress, const std::string& config_json) {
  Checkpoint c;
  for (const auto& [name, t] : parameter_values(model)) c.add("param." + name, t);
  for (const auto& [name, t] : model.named_buffers()) c.add("buffer." + name, t);
  for (const auto& [name, t] : optimizer.named_state()) c.add("optim." + name, t);
  c.metadata["format"] = "rmsgrad training checkpoint 1";
  c.metadata["step"] = std::to_string(progress.step);
  c.metadata["epoch"] = std::to_string(progress.epoch);
  c.metadata["best_metric"] = fmt::format("{:.17g}", progress.best_metric);
  c.metadata["train_seconds"] = fmt::format("{:.17g}", progress.train_seconds);
  for (const auto& [name, gen] : progress.generators)
    c.metadata["rng." + name] = fmt::format("{} {}", gen->seed(), gen->offset());
  if (progress.cursor) c.metadata["data_cursor"] = progress.cursor->state().to_string();
  c.metadata["config"] = config_json;
  save_checkpoint(path, c);
}

void load_training_checkpoint(const std::string& path, Module& model, Optimizer& optimizer,
                              TrainingProgress& progress) {
  Checkpoint c = load_checkpoint(path);
  check(c.metadata.count("format") && c.metadata.at("format") == "rmsgrad training checkpoint 1",
        "checkpoint {}: not a training checkpoint of this program", path);
  restore_tensors(c, "param.", parameter_values(model));
  restore_tensors(c, "buffer.", model.named_buffers());
  restore_tensors(c, "optim.", optimizer.named_state());
  progress.step = parse_int(c, "step");
  progress.epoch = parse_int(c, "epoch");
  progress.best_metric = std::stod(c.meta("best_metric"));
  progress.train_seconds = std::stod(c.meta("train_seconds"));
  for (auto& [name, gen] : progress.generators) {
    unsigned long long seed = 0, offset = 0;
    check(std::sscanf(c.meta("rng." + name).c_str(), "%llu %llu", &seed, &offset) == 2,
          "checkpoint {}: bad generator state for '{}'", path, name);
    gen->set_state(seed, offset);
  }
  if (progress.cursor) progress.cursor->restore(CursorState::from_string(c.meta("data_cursor")));
}

}  // namespace rg
