#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/common/norm_flags.h"

#include <algorithm>

#include "rmsgrad/autograd/batch_norm.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/train/run.h"

namespace rg {

void add_norm_flags(CLI::App& app, NormOptions& options, const std::vector<std::string>& kinds,
                    const std::string& where) {
  app.add_option_function<std::string>(
         "--norm", [&options](const std::string& name) { options.kind = parse_norm_kind(name); },
         "the normalization " + where)
      ->check(CLI::IsMember(kinds))
      ->default_str(norm_name(options.kind));
  app.add_option("--p", options.p, "pRMSNorm's fraction of units")->check(rg::in_range(0.0, 1.0));
  app.add_option_function<std::string>(
         "--norm-impl", [&options](const std::string& name) { options.impl = parse_norm_impl(name); },
         "fused: one kernel per norm; composed: built from ops, as the paper's frameworks did")
      ->check(CLI::IsMember({"fused", "composed"}))
      ->default_str(norm_impl_name(options.impl));
  app.add_option("--preact-shift", options.preact_shift,
                 "start the input of every normalized place shifted by C (a learnable offset per unit)");
  app.add_option("--eps", options.eps, "ε of the norms (inside the square root)")->check(rg::in_range(1e-30, 1));
  if (std::find(kinds.begin(), kinds.end(), "batchnorm") == kinds.end()) return;
  // Checked once --norm and --norm-impl are read: CLI11 runs the flags' callbacks in the order they were added.
  const std::string sync_help =
      "under mpirun: BatchNorm statistics over the global batch (default: each process's share)";
  app.add_flag("--sync-batchnorm", sync_help)
      ->each([&options](const std::string& value) {
        if (value == "false" || value == "0") return;
        check(options.kind != NormKind::BatchNorm || options.impl == NormImpl::Fused,
              "--sync-batchnorm needs --norm-impl fused (the composed BatchNorm sums inside its own ops)");
        const dist::ProcessGroup& group = dist::ProcessGroup::world();
        if (group.distributed()) options.batch_norm_sum = [&group](std::span<double> values) { group.sum(values); };
      });
}

}  // namespace rg
