#pragma once
// The normalization flags every driver has, in one place:
//
//   --norm KIND        which norm sits at the model's normalized places
//   --p P              pRMSNorm's fraction of units
//   --norm-impl IMPL   fused (one kernel per norm) or composed from ops
//   --preact-shift C   start every normalized input shifted by C (a learnable offset)
//   --eps E            ε of the norms
//   --sync-batchnorm   (models with BatchNorm) under mpirun, statistics over
//                      the global batch, not each process's share: the
//                      options() it gives sum them over the processes
//                      (NormOptions::batch_norm_sum)
//
// A driver sets its defaults in NormFlags (as the paper's recipe for that
// model has them) before add_norm_flags, which shows them in --help.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "rmsgrad/layers/normalization.h"

namespace rg {

struct NormFlags {
  std::string norm = "rmsnorm";
  std::string impl = "fused";
  float preact_shift = 0.0f;
  float p = 0.0625f;
  float eps = 1e-5f;
  bool sync_batchnorm = false;

  NormOptions options() const;  // the flags as the layers take them
};

// Adds the five flags (six with batchnorm among the kinds). `kinds` are the --norm values this model supports;
// `where` says where the model normalizes ("inside the GRU").
void add_norm_flags(CLI::App& app, NormFlags& flags, const std::vector<std::string>& kinds, const std::string& where);

}  // namespace rg
