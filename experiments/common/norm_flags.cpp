#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/common/norm_flags.h"

#include <algorithm>

#include "rmsgrad/autograd/batch_norm.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/train/run.h"

namespace rg {

NormOptions NormFlags::options() const {
  NormOptions o;
  o.kind = parse_norm_kind(norm);
  o.p = p;
  o.impl = parse_norm_impl(impl);
  o.preact_shift = preact_shift;
  o.eps = eps;
  check(!sync_batchnorm || o.kind != NormKind::BatchNorm || o.impl == NormImpl::Fused,
        "--sync-batchnorm needs --norm-impl fused (the composed BatchNorm sums inside its own ops)");
  const dist::ProcessGroup& group = dist::ProcessGroup::world();
  if (sync_batchnorm && group.distributed())
    o.batch_norm_sum = [&group](std::span<double> values) { group.sum(values); };
  return o;
}

void add_norm_flags(CLI::App& app, NormFlags& flags, const std::vector<std::string>& kinds, const std::string& where) {
  app.add_option("--norm", flags.norm, "the normalization " + where)->check(CLI::IsMember(kinds));
  app.add_option("--p", flags.p, "pRMSNorm's fraction of units")->check(rg::in_range(0.0, 1.0));
  app.add_option("--norm-impl", flags.impl,
                 "fused: one kernel per norm; composed: built from ops, as the paper's frameworks did")
      ->check(CLI::IsMember({"fused", "composed"}));
  app.add_option("--preact-shift", flags.preact_shift,
                 "start the input of every normalized place shifted by C (a learnable offset per unit)");
  app.add_option("--eps", flags.eps, "ε of the norms (inside the square root)")->check(rg::in_range(1e-30, 1));
  if (std::find(kinds.begin(), kinds.end(), "batchnorm") == kinds.end()) return;
  app.add_flag("--sync-batchnorm", flags.sync_batchnorm,
               "under mpirun: BatchNorm statistics over the global batch (default: each process's share)");
}

}  // namespace rg
