#pragma once
// Saving and restoring everything a run needs to continue exactly where it
// stopped: the model's parameters and buffers, the optimizer's state, the
// step and epoch, every random generator's (seed, offset), the data cursor,
// and the run's config — in one safetensors file (checkpoint.h), written
// atomically.
//
// With one thread, a resumed run then produces bit for bit the losses of a
// run that never stopped: every input to a step (weights, moments, dropout
// and noise draws, the batch) is restored exactly, and the arithmetic is
// deterministic. (With more threads, reductions may split differently.)
#include <string>

#include "rmsgrad/experiments/common/training_progress.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/optim/optimizer.h"

namespace rg {

void save_training_checkpoint(const std::string& path, const Module& model, Optimizer& optimizer,
                              const TrainingProgress& progress, const std::string& config_json);

// Restores into the given model, optimizer, generators and cursor. Throws
// rg::Error naming the file and every mismatch (missing, extra, wrong shape).
void load_training_checkpoint(const std::string& path, Module& model, Optimizer& optimizer,
                              TrainingProgress& progress);

// Restores only the model's parameters and buffers (to evaluate a kept
// checkpoint, e.g. best.safetensors); returns the step it was saved at.
int64_t load_trained_model(const std::string& path, Module& model);

}  // namespace rg
