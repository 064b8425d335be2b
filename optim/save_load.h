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
// Module::named_generators: dropout masks continue where they were) and of
// any other generator named in `generators` (a driver's input noise).
//
// This is the one format of a checkpoint of training: the experiment
// drivers' checkpoint.safetensors and best.safetensors are training states
// (their trainer's progress is metadata, train/trainer.h), and
// rg::load(model, path) reads the model out of any of them.
#include <map>
#include <utility>
#include <vector>
#include <string>

#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/optim/optimizer.h"

namespace rg {

using Metadata = std::map<std::string, std::string>;
using NamedGenerators = std::vector<std::pair<std::string, Generator*>>;

// The "format" mark of a training state.
inline constexpr const char* kTrainingStateFormat = "rmsgrad training state";

void save(Optimizer& optimizer, const std::string& path);
void load(Optimizer& optimizer, const std::string& path);

void save_training_state(const std::string& path, const Module& model, Optimizer& optimizer,
                         const Metadata& metadata = {}, const NamedGenerators& generators = {});
// Restores the model, the optimizer and the generators (strictly, like load)
// and returns the metadata saved with them, without the format mark and the
// generators' positions. A file of another format is refused with its name;
// one of another model (its parameters named otherwise) with the first name
// that differs, before anything else is compared.
Metadata load_training_state(const std::string& path, Module& model, Optimizer& optimizer,
                             const NamedGenerators& generators = {});
Metadata load_training_state(const Checkpoint& file, Module& model, Optimizer& optimizer,
                             const NamedGenerators& generators = {});  // from a file already read

// Throws rg::Error unless `file` is a training state, naming the format it has
// (and saying so when it is a driver checkpoint of an earlier version).
void check_training_state(const Checkpoint& file);

// A generator's position as text ("seed offset"), and back.
std::string generator_state(const Generator& gen);
void restore_generator(Generator& gen, const std::string& state);

}  // namespace rg
