#pragma once
// Saving a trained module and loading it in another program.
//
//   rg::save(model, "mnist_mlp.safetensors");
//   ...
//   MyModel model;                        // the same architecture
//   rg::load(model, "mnist_mlp.safetensors");
//
// The file is safetensors (core/checkpoint.h): every parameter and buffer
// under its dotted name ("0.weight", "encoder.gru.norm_x.gain"), float32, so
// Python reads it with safetensors.torch.load_file. Loading is strict: a
// missing or extra tensor, or a shape that differs, is an rg::Error that lists
// every mismatch, and the module is left unchanged; so is a file of another
// kind (an optimizer's), named by its format. Writing is atomic: a crash
// leaves the old file or the new one, never a torn one.
//
// To continue training exactly (optimizer state, step, generators, data
// position), see save_training_state in optim/save_load.h.
#include <map>
#include <string>

#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/layers/module.h"

namespace rg {

// `metadata` travels with the weights as strings (a vocabulary joined by
// newlines, the settings that rebuild the architecture); "format" is the
// file's own key and cannot be one of them.
using Metadata = std::map<std::string, std::string>;
void save(const Module& module, const std::string& path, const Metadata& metadata = {});
// Reads the module from a file of save(), from a training state
// (optim/save_load.h: a driver's checkpoint.safetensors or best.safetensors)
// or from a plain safetensors file of its tensor names (from Python), and
// returns the file's metadata without its "format".
//
//   rg::save(model, "lm.safetensors", {{"vocabulary", vocab.str()}, {"layers", "4"}});
//   rg::Metadata meta = rg::load(model, "lm.safetensors");   // meta.at("vocabulary")
Metadata load(Module& module, const std::string& path);
Metadata load(Module& module, const Checkpoint& file);  // the same, from a file already read

// The module's parameters and buffers as named tensors (they alias the
// module's storage: copying into them changes the module).
std::vector<std::pair<std::string, Tensor>> module_tensors(const Module& module);

}  // namespace rg
