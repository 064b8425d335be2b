#pragma once
// Saving an optimizer, and everything a run needs to continue exactly.
//
//   rg::save(adam, "adam.safetensors");     rg::load(adam, "adam.safetensors");
//
// saves and restores the optimizer's state (Adam's moments, every update
// count and the step counter; optim/optimizer.h names them). The optimizer
// must hold the same parameters, under the same names, as the one saved.
//
// A training state is one file with the model, the optimizer and your own
// counters, so a run killed at any moment resumes where its last save was:
//
//   rg::save_training_state("run/last.safetensors", model, adam,
//                           {{"step", std::to_string(step)},
//                            {"data", loader.state().to_string()},
//                            {"dropout", rg::generator_state(dropout_gen)}});
//   ...
//   rg::Metadata m = rg::load_training_state("run/last.safetensors", model, adam);
//   step = std::stoll(m.at("step"));
//   loader.restore(rg::CursorState::from_string(m.at("data")));
//   rg::restore_generator(dropout_gen, m.at("dropout"));
//
// With one thread the resumed run then computes bit for bit what a run that
// never stopped computes: every input of every later step is restored exactly.
// In the file the model's tensors are "param.<name>" and "buffer.<name>", the
// optimizer's "optim.<name>", and the counters are its metadata, beside the
// positions of the generators the model's modules own ("generator.<name>",
// Module::named_generators: dropout masks continue where they were).
#include <map>
#include <string>

#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/optim/optimizer.h"

namespace rg {

using Metadata = std::map<std::string, std::string>;

void save(Optimizer& optimizer, const std::string& path);
void load(Optimizer& optimizer, const std::string& path);

void save_training_state(const std::string& path, const Module& model, Optimizer& optimizer,
                         const Metadata& metadata = {});
// Restores the model and the optimizer (strictly, like load) and returns the
// metadata saved with them.
Metadata load_training_state(const std::string& path, Module& model, Optimizer& optimizer);

// The tensors of a training state, and their strict restore: the model's
// "param.<name>" and "buffer.<name>", the optimizer's "optim.<name>". Shared
// with the drivers' checkpoints, which add metadata of their own.
void add_training_tensors(Checkpoint& file, const Module& model, Optimizer& optimizer);
void restore_training_tensors(const Checkpoint& file, Module& model, Optimizer& optimizer);

// A generator's position as text ("seed offset"), and back.
std::string generator_state(const Generator& gen);
void restore_generator(Generator& gen, const std::string& state);

}  // namespace rg
