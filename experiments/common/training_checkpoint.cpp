#include "rmsgrad/experiments/common/training_checkpoint.h"

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/optim/save_load.h"

namespace rg {

namespace {

std::vector<std::pair<std::string, Tensor>> parameter_values(const Module& model) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, v] : model.named_parameters()) out.emplace_back(name, v.value());
  return out;
}

}  // namespace

void save_training_checkpoint(const std::string& path, const Module& model, Optimizer& optimizer,
                              const TrainingProgress& progress, const std::string& config_json) {
  Checkpoint c;
  add_training_tensors(c, model, optimizer);
  write_training_progress(progress, c);
  c.metadata["config"] = config_json;
  save_checkpoint(path, c);
}

void load_training_checkpoint(const std::string& path, Module& model, Optimizer& optimizer,
                              TrainingProgress& progress) {
  Checkpoint c = load_checkpoint(path);
  read_training_progress(c, progress);  // first: a foreign file fails on its format mark
  restore_training_tensors(c, model, optimizer);
}

int64_t load_trained_model(const std::string& path, Module& model) {
  Checkpoint c = load_checkpoint(path);
  TrainingProgress progress;  // no generators, no cursor: only the step is kept
  read_training_progress(c, progress);
  restore_tensors(c, "param.", parameter_values(model));
  restore_tensors(c, "buffer.", model.named_buffers());
  return progress.step;
}

}  // namespace rg
