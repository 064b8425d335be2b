// How far a training step is from its floor: the matrix products it must do,
// run alone at the speed OpenBLAS gives those same shapes.
//
//   bench_floor --model transformer --threads 1
//   bench_floor --model rnnsearch --threads 2 --norm layernorm --set batch=40
//
// One step runs under a GemmRecording (core/gemm.h), which notes every
// product the forward and backward passes and the optimizer ask of BLAS —
// shapes, transposes, batch, whether it accumulates. Those calls are then
// replayed back to back, with the same threads and the same gemm_batched
// dispatch, on buffers of random numbers; their time is the floor. The step
// and the replay are each timed `--steps` times after `--warmup` untimed
// rounds, medians reported.
//
// Prints one JSON line: model, norm, threads, the sizes, step_ms, floor_ms,
// rest_ms (step − floor: everything that is not a product), step_over_floor,
// gemm_gflop (the FLOPs of all the step's products, in 1e9), gemm_calls and
// floor_gflops (the products' speed when run alone).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "bench/model_steps/bench_flags.h"
#include "bench/step_timing.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/parallel.h"

using namespace rg;

namespace {

// Buffers large enough for every recorded call's operands.
struct ReplayBuffers {
  std::vector<float> a, b, c;
  explicit ReplayBuffers(const std::vector<GemmCall>& calls) {
    size_t sa = 1, sb = 1, sc = 1;
    for (const GemmCall& g : calls) {
      sa = std::max(sa, static_cast<size_t>(g.batch * g.m * g.k));
      sb = std::max(sb, static_cast<size_t>(g.batch * g.k * g.n));
      sc = std::max(sc, static_cast<size_t>(g.batch * g.m * g.n));
    }
    Generator gen(7);
    auto fill = [&](std::vector<float>& v, size_t n) {
      v.resize(n);
      for (float& x : v) x = static_cast<float>(gen.uniform() - 0.5);
    };
    fill(a, sa), fill(b, sb), fill(c, sc);
  }
};

void replay(const std::vector<GemmCall>& calls, ReplayBuffers& buffers) {
  for (const GemmCall& g : calls)
    gemm_batched(g.batch, g.trans_a, g.trans_b, g.m, g.n, g.k, 1.0f, buffers.a.data(), buffers.b.data(),
                 g.accumulate ? 1.0f : 0.0f, buffers.c.data());
}

}  // namespace

int main(int argc, char** argv) {
  bench::ModelFlags flags;
  flags.model = "transformer";
  std::string norm = "layernorm";
  int steps = 5;
  CLI::App app{"A training step against the time of its matrix products alone", "bench_floor"};
  bench::add_model_flags(app, flags);
  app.add_option("--norm", norm, "the normalization");
  app.add_option("--steps", steps, "timed steps (and timed replays)")->check(CLI::PositiveNumber);
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  try {
    set_num_threads(flags.threads);
    bench::Sizes sizes = flags.sizes();
    std::unique_ptr<bench::ModelStep> step =
        bench::make_model_step(flags.model, {parse_norm_kind(norm), NormImpl::Fused}, sizes);
    const std::vector<double> step_times = bench::time_steps([&] { step->run(); }, flags.warmup, steps);
    check(std::isfinite(step->loss()), "bench_floor: the loss is {}", step->loss());

    std::vector<GemmCall> calls;
    {
      GemmRecording recording;
      step->run();
      calls = recording.calls();
    }
    ReplayBuffers buffers(calls);
    const std::vector<double> floor_times = bench::time_steps([&] { replay(calls, buffers); }, flags.warmup, steps);

    double flops = 0.0;
    for (const GemmCall& g : calls) flops += g.flops();
    const double step_ms = bench::median_of(step_times), floor_ms = bench::median_of(floor_times);
    std::printf("{\"model\": \"%s\", \"norm\": \"%s\", \"threads\": %d, %s\"step_ms\": %.1f, \"floor_ms\": %.1f, "
                "\"rest_ms\": %.1f, \"step_over_floor\": %.3f, \"gemm_gflop\": %.2f, \"gemm_calls\": %zu, "
                "\"floor_gflops\": %.1f}\n",
                flags.model.c_str(), norm.c_str(), flags.threads, sizes.json().c_str(), step_ms, floor_ms,
                step_ms - floor_ms, step_ms / floor_ms, flops / 1e9, calls.size(), flops / 1e6 / floor_ms);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_floor: %s\n", e.what());
    return 1;
  }
}
