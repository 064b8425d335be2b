#pragma once
// The paper's results tables, made from sibling run directories.
//
//   build/bin/paper_table runs/cifar10 --metric error_pct --split valid,test --time epoch
//   build/bin/paper_table runs/oe --metric image_r1,image_r5,image_r10,image_mean_r --split test
//
//   | norm      | valid error_pct | test error_pct | s per epoch | speedup |
//   |-----------|-----------------|----------------|-------------|---------|
//   | layernorm |           12.40 |              – |        41.2 |       – |
//   | rmsnorm   |           11.90 |              – |        33.0 |   19.9% |
//
// For each run (a directory holding metrics.jsonl; a directory without one
// stands for its subdirectories that have one):
//  - the label is config.json's "norm" (else the directory name; or another
//    key's value, TableOptions::label_key);
//  - one column per split and metric (split-major: every metric of the first
//    split, then of the next), each the metric on that split's LAST line
//    carrying it (the final or selected model, as the paper reports), or "–";
//  - the time is the median of the train lines' sec_per_1k_steps (robust to
//    the first interval's warm-up and to pauses), scaled to the unit: per 1k
//    steps, per 0.1k steps, or per epoch (steps per epoch = step / epoch of
//    the last train line that has an "epoch" field);
//  - the speedup is the paper's (T_LayerNorm − T) / T_LayerNorm, against the
//    run labelled "layernorm" (TableOptions::reference; "–" when there is none).
// With paired timing (TableOptions::paired, bench_norm_impl's lines) the two
// time columns are replaced by the fused step's ms, the fused speedup and the
// composed speedup with their 95% intervals (experiments/common/paired_timing.h):
// separate runs cannot resolve differences below ~5%.
// With a target (TableOptions::target; paper_table --below 5 for a metric
// where lower is better, --above 36 where higher is), two columns after the
// label: the first step after the start whose first split's first metric
// passes it ("> N" when none does, N the last evaluated step; an evaluation of
// the initial weights at step 0 does not count: it measures where training
// starts, not how soon it gets there), and the training time to that
// step: steps × the fused step's paired time when paired timing is given,
// else the run's own time_sec on that line (training time, evaluation
// excluded). Over several seeds: how many seeds reached it, their steps'
// mean ± sd, their time's mean with a 95% interval, and the time's difference
// from LayerNorm's run of the same seed (over the seeds where both reached it)
// with its 95% interval — the paper's Figure 1 question asked with statistics.
// Rows follow the paper's order (none, layernorm, rmsnorm, prmsnorm, ...),
// then any other labels, numbers by value, the rest alphabetically.
// Several runs with the same label (one norm, several seeds: SEEDS="1 2 3"
// in the paper scripts) make one row: "seeds", each metric's mean ± sd and
// its difference from LayerNorm paired by seed, with a 95% interval
// (experiments/common/seed_statistics.h); the time is the runs' mean.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "rmsgrad/experiments/common/paired_timing.h"

namespace rg {

enum class TimeUnit { Per1k, Per100, PerEpoch };

struct TableOptions {
  std::vector<std::string> metrics = {"loss"};
  std::vector<std::string> splits = {"valid"};
  TimeUnit time = TimeUnit::Per1k;
  int decimals = 2;
  const PairedTimes* paired = nullptr;  // time columns from paired timing, when given
  // Which config.json key labels a run, and which label the others are
  // compared with: the paper's tables compare norms with LayerNorm; the
  // pre-activation shift experiment compares shifts with none
  // (label_key "preact-shift", reference "0").
  std::string label_key = "norm";
  std::string reference = "layernorm";
  // The steps-to-target columns: NaN for none; passed when the metric is
  // below it (or above it, with higher_is_better).
  double target = std::numeric_limits<double>::quiet_NaN();
  bool higher_is_better = false;
};

struct RunSummary {
  std::string label;
  int64_t seed = -1;  // config.json's "seed" (-1 when absent)
  std::filesystem::path dir;
  std::vector<double> metric;  // [split][metric], split-major; NaN when absent
  double seconds = 0.0;        // in the table's unit; NaN when unknown
  // With a target: the first step after 0 whose first metric (first split)
  // passes it (-1: none), its line's time_sec, and the last step carrying the metric.
  int64_t target_step = -1, last_step = -1;
  double target_seconds = std::numeric_limits<double>::quiet_NaN();
};

// The run directories under `paths` (see above). Throws rg::Error when a path
// does not exist or holds no run at all.
std::vector<std::filesystem::path> find_run_dirs(const std::vector<std::string>& paths);

// Reads one run; throws rg::Error naming the file and line of a malformed
// metrics line.
RunSummary summarize_run(const std::filesystem::path& dir, const TableOptions& options);

// The markdown table over every run, rows in the paper's order. `legend`, when
// given, receives one or two lines that say what the columns mean.
std::string results_table(const std::vector<std::filesystem::path>& dirs, const TableOptions& options,
                          std::string* legend = nullptr);

}  // namespace rg
