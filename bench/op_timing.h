#pragma once
// Timing one op or layer on its own, for the per-op benchmarks (bench_gru,
// bench_lstm, bench_norms, bench_conv): their shared flags, and forward and
// forward+backward medians.
//
// Forward alone runs under NoGradGuard: nothing is recorded, as in
// evaluation. Forward+backward records the op, runs the backward pass from
// a fixed upstream gradient dy, and clears the tape; before each repeat the
// inputs' gradients are dropped, so every backward allocates and writes
// fresh gradient buffers as it would for an activation inside a training
// step (not accumulating into last repeat's).
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/autograd/var.h"
#include "bench/bench_cli.h"
#include "bench/step_timing.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/layers/normalization.h"

namespace rg::bench {

struct OpFlags {
  int threads = 1;
  int repeats = 30;
  std::string norm_impl = "fused";  // fused kernels, or the norms composed from ops
  NormImpl impl() const { return parse_norm_impl(norm_impl); }
};

// --threads, --repeats and (with_norm_impl) --norm-impl.
inline void add_op_flags(CLI::App& app, OpFlags& flags, bool with_norm_impl = true) {
  app.add_option("--threads", flags.threads, "threads")->check(CLI::PositiveNumber);
  app.add_option("--repeats", flags.repeats, "timed repeats; the median is reported")->check(CLI::PositiveNumber);
  if (with_norm_impl)
    app.add_option("--norm-impl", flags.norm_impl, "fused: one kernel per norm; composed: built from ops")
        ->check(CLI::IsMember({"fused", "composed"}));
}

// The median of `repeats` timed calls after three untimed ones (they fill
// the allocator's cache and let OpenBLAS size its buffers).
inline double median_ms(int repeats, const Step& step) { return median_of(time_steps(step, 3, repeats)); }

struct ForwardBackwardMs {
  double fwd = 0, fwd_bwd = 0;
};

// `forward` computes the op's output from `inputs` (and whatever else it
// captures); the backward pass starts from dy.
inline ForwardBackwardMs time_forward_backward(const std::function<Var()>& forward, const std::vector<Var>& inputs,
                                               const Tensor& dy, int repeats) {
  ForwardBackwardMs ms;
  ms.fwd = median_ms(repeats, [&] {
    NoGradGuard no_grad;
    forward();
  });
  ms.fwd_bwd = median_ms(repeats, [&] {
    for (const Var& v : inputs) v.node()->grad = Tensor();
    Var y = forward();
    tape().backward(y, dy);
    tape().clear();
  });
  return ms;
}

}  // namespace rg::bench
