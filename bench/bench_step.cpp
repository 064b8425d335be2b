// Times one training step of one of the paper's models on a fixed batch
// (bench/model_steps/: the model, its recipe and its batch), for comparing
// with the same step of its PyTorch twin; bench/bench_<model>.sh runs both.
//
//   bench_step --model rnnsearch --norm rmsnorm --threads 2 --steps 5
//   bench_step --model reader --norm layernorm --norm-impl composed --set batch=32
//   bench_step --model rnnsearch --norm layernorm --dump DIR   # the twin's check, then
//   bench/rnnsearch_torch.py --check DIR
//
// Prints one JSON line: {"impl": "rmsgrad", "model", "norm", "norm_impl",
// "threads", <the model's sizes>, "parameters", "ms_per_step", "ms_min"}: the
// median and the fastest of the timed steps after the warm-up.
#include <cmath>
#include <cstdio>

#include "bench/model_steps/bench_flags.h"
#include "bench/step_timing.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

using namespace rg;

int main(int argc, char** argv) {
  bench::ModelFlags flags;
  std::string norm = "rmsnorm", impl = "fused", dump;
  int steps = 5;
  CLI::App app{"One training step of a model, timed alone", "bench_step"};
  bench::add_model_flags(app, flags);
  app.add_option("--norm", norm, "the normalization");
  app.add_option("--norm-impl", impl, "fused kernels or composed from ops")
      ->check(CLI::IsMember({"fused", "composed"}));
  app.add_option("--steps", steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--dump", dump, "write the check for the PyTorch twin to this folder instead (rnnsearch, transformer)");
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  try {
    set_num_threads(flags.threads);
    bench::Sizes sizes = flags.sizes();
    if (!dump.empty()) sizes.set("dropout=0");
    const bench::NormChoice choice{parse_norm_kind(norm), parse_norm_impl(impl)};
    std::unique_ptr<bench::ModelStep> step = bench::make_model_step(flags.model, choice, sizes);
    if (!dump.empty()) {
      step->dump(dump);
      return 0;
    }
    const std::vector<double> times = bench::time_steps([&] { step->run(); }, flags.warmup, steps);
    check(std::isfinite(step->loss()), "bench_step: the loss is {}", step->loss());
    std::printf("{\"impl\": \"rmsgrad\", \"model\": \"%s\", \"norm\": \"%s\", \"norm_impl\": \"%s\", "
                "\"threads\": %d, %s\"parameters\": %lld, \"ms_per_step\": %.3f, \"ms_min\": %.3f}\n",
                flags.model.c_str(), norm.c_str(), impl.c_str(), flags.threads, sizes.json().c_str(),
                static_cast<long long>(step->model().parameter_count()), bench::median_of(times), times.front());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_step: %s\n", e.what());
    return 1;
  }
}
