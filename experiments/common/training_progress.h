#pragma once
// Where a run stands, as the metadata of its checkpoint: the step and epoch,
// every random generator's (seed, offset), the data cursor, the best
// validation score and the training time. training_checkpoint.h stores it
// next to the model and optimizer tensors; reading it needs no model, so the
// checkpoint fuzzer (fuzz/checkpoint_fuzzer.cpp) reads it on its own.
//
// Every value is text in the safetensors metadata (checkpoint.h): integers
// and "%.17g" doubles, a generator as "<seed> <offset>", the cursor as its
// JSON state. Reading checks each one and throws rg::Error naming the file
// and the key, never a bare std::stoll / std::stod exception.
#include <cstdint>
#include <map>
#include <string>

#include "rmsgrad/core/random.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/core/checkpoint.h"

namespace rg {

struct TrainingProgress {
  int64_t step = 0;   // optimizer steps completed
  int64_t epoch = 0;
  std::map<std::string, Generator*> generators;  // by name, e.g. "dropout", "noise"
  BatchCursor* cursor = nullptr;                   // optional
  double best_metric = 0.0;                        // e.g. best validation score so far
  double train_seconds = 0.0;                      // training time so far
};

// The "format" mark of a training checkpoint, and the progress as metadata.
void write_training_progress(const TrainingProgress& progress, Checkpoint& checkpoint);

// Checks the format mark and restores step, epoch, scores, generators and the
// cursor (when progress has them). Throws rg::Error naming the file and key.
void read_training_progress(const Checkpoint& checkpoint, TrainingProgress& progress);

}  // namespace rg
