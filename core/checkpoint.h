#pragma once
// Checkpoints in the safetensors layout, so any tool can read them:
//
//   8 bytes   little-endian u64 N, the length of the header
//   N bytes   JSON: {"__metadata__": {string: string},
//                    "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
//   the raw little-endian float32 data of every tensor, offsets relative to here
//
// Above this file, layers/save_load.h saves a module (its parameters and
// buffers under their dotted names) and optim/save_load.h a whole training
// state: parameters ("param.<dotted name>"), buffers ("buffer.<name>"),
// optimizer state ("optim.<name>") and, in the metadata, whatever else the
// run needs to resume exactly (step, RNG state, data position, config).
// Writing is atomic: a temporary file in the
// same directory is written, fsync'ed and renamed over the old one, so a crash
// at any moment leaves either the old or the new checkpoint, never a torn one.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/core/tensor.h"

namespace rg {

struct Checkpoint {
  std::vector<std::pair<std::string, Tensor>> tensors;  // in file order
  std::map<std::string, std::string> metadata;

  void add(const std::string& name, const Tensor& t) { tensors.emplace_back(name, t); }
  const Tensor* find(const std::string& name) const;
  // The metadata value, or throws naming the key and the file it came from.
  const std::string& meta(const std::string& key) const;
  std::string source;  // the path it was loaded from, for messages
};

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// Validates the header (length, JSON, dtypes, shapes, offsets inside the file,
// no overlaps) and throws rg::Error naming the file and what is wrong. Only a
// regular file is read: a FIFO (which would block for ever), a device or a
// folder is refused before a byte is read.
Checkpoint load_checkpoint(const std::string& path);

// Copies the checkpoint's "<prefix><name>" tensors into `targets` (same
// names), checking that every target is present with the same shape and that
// the checkpoint has no extra "<prefix>" tensors. Lists every problem.
void restore_tensors(const Checkpoint& checkpoint, const std::string& prefix,
                     const std::vector<std::pair<std::string, Tensor>>& targets);

}  // namespace rg
