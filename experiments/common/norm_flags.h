#pragma once
// The normalization flags every driver has, in one place, filling the
// library's selector (NormOptions, layers/normalization.h) directly:
//
//   --norm KIND        which norm sits at the model's normalized places (.kind)
//   --p P              pRMSNorm's fraction of units (.p)
//   --norm-impl IMPL   fused (one kernel per norm) or composed from ops (.impl)
//   --preact-shift C   start every normalized input shifted by C, a learnable offset (.preact_shift)
//   --eps E            ε of the norms (.eps)
//   --sync-batchnorm   (models with BatchNorm) under mpirun, statistics over
//                      the global batch, not each process's share: sums
//                      them over the processes (.batch_norm_sum)
//
// A driver sets its defaults in its NormOptions (as the paper's recipe for
// that model has them) before add_norm_flags, which shows them in --help.
// --norm and --norm-impl are read by name, so that config.json keeps the
// names ("rmsnorm", "fused").
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "rmsgrad/layers/normalization.h"

namespace rg {

// Adds the five flags (six with batchnorm among the kinds). `kinds` are the --norm values this model supports;
// `where` says where the model normalizes ("inside the GRU").
void add_norm_flags(CLI::App& app, NormOptions& options, const std::vector<std::string>& kinds,
                    const std::string& where);

}  // namespace rg
