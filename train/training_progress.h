#pragma once
// Where a run stands, as metadata of its training state (optim/save_load.h):
// the step and epoch, the best validation score, the training time and the
// data cursor. The trainer (trainer.h) writes it into every checkpoint;
// reading it needs no model, so the checkpoint fuzzer
// (fuzz/checkpoint_fuzzer.cpp) reads it on its own.
//
// Every value is text: integers and "%.17g" doubles, the cursor as its JSON
// state. Reading checks each one and throws rg::Error naming the file and the
// key, never a bare std::stoll / std::stod exception.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "rmsgrad/data/batching.h"
#include "rmsgrad/optim/save_load.h"

namespace rg {

struct TrainingProgress {
  int64_t step = 0;   // optimizer steps completed
  int64_t epoch = 0;
  double best_metric = 0.0;                // the best validation score so far
  double train_seconds = 0.0;              // training time so far
  std::optional<CursorState> cursor = {};  // the data cursor, when the trainer keeps one
  // The sums behind the next train line: the losses of its steps so far and
  // their count, and the driver's own sums (Trainer::add_to_interval), so
  // that a resumed run's first line averages what an uninterrupted one's does.
  double interval_loss = 0.0;
  int64_t interval_steps = 0;
  std::map<std::string, double> interval_sums = {};
  // The lines of metrics.jsonl when the checkpoint was saved (Run::metrics_lines):
  // a resume drops those logged after it. Unset in older checkpoints.
  std::optional<int64_t> metrics_lines = {};
};

Metadata progress_metadata(const TrainingProgress& progress);

// The progress in a training state's metadata; `source` names the file in errors.
TrainingProgress read_training_progress(const Metadata& metadata, const std::string& source);

}  // namespace rg
