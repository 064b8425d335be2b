#pragma once
// The time columns of the paper's tables from paired timing: the JSON lines
// that bench_norm_impl prints (every norm's training step, fused and composed
// from ops, timed against LayerNorm's in interleaved rounds in one process),
// and the sentence that says what they mean.
//
// Why not time the training runs themselves: runs one after another on a
// shared VM see machines whose speed drifts by 10–30% over minutes, so their
// time columns cannot resolve differences of a few percent (the main job once
// printed pRMSNorm 35% slower than LayerNorm on one machine and 13% faster on
// another, same code). Paired steps seconds apart can.
#include <filesystem>
#include <string>
#include <vector>

namespace rg {

struct PairedRow {
  std::string impl, norm;  // "fused" | "composed"; "layernorm", ...
  int threads = 0, pairs = 0;
  double ms_per_step = 0;
  double ratio = 0, low = 0, high = 0;  // step ÷ LayerNorm's of the same impl, 95% interval (NaN: none)
  double composed_vs_fused = 0, cf_low = 0, cf_high = 0;  // NaN unless a composed row beside its fused one
};

struct PairedTimes {
  std::vector<PairedRow> rows;
  const PairedRow* find(const std::string& impl, const std::string& norm) const;  // null when absent
};

// Reads bench_norm_impl's lines of one model (other lines are skipped); throws
// rg::Error naming the file and line of a malformed one, of a second model's
// line, or when none is found.
PairedTimes read_paired_timing(const std::filesystem::path& path);

// "12.3% (10.1 to 14.0)": the speedup 1 − ratio against LayerNorm with its interval.
std::string speedup_with_interval(const PairedRow& row);

// One paragraph on how to read the paired columns: what composed and fused
// RMSNorm (and pRMSNorm) save against LayerNorm, measured, and where the
// paper's speedups come from. Empty when the lines lack LayerNorm or RMSNorm.
std::string paired_timing_explanation(const PairedTimes& times);

}  // namespace rg
