// Times one training step of one of the paper's models on a fixed batch
// (bench/model_steps/: the model, its recipe and its batch), for comparing
// with the same step of its PyTorch twin; bench/bench_<model>.sh runs both.
//
//   bench_step --model rnnsearch --norm rmsnorm --threads 2 --steps 5
//   bench_step --model reader --norm layernorm --norm-impl composed --set batch=32
//   bench_step --model rnnsearch --norm layernorm --dump DIR   # the twin's check, then
//   bench/rnnsearch_torch.py --check DIR
//   bench_step --model transformer --recipe    # the settings, as the twins read them
//   bench_step --model convpool --precision bf16   # products and convolutions in bf16
//
// Prints one JSON line: {"impl": "rmsgrad", "model", "norm", "norm_impl",
// "threads", "precision", <the model's sizes>, "parameters", "ms_per_step", "ms_min"}: the
// median and the fastest of the timed steps after the warm-up.
//
// Under mpirun the step is data-parallel, as the drivers' loop makes it: each
// process trains its batch (give the per-process size, --set batch=…) and
// backward sums the gradients over the processes in buckets. Rank 0 prints the
// line with "processes", the buckets ("buckets"; "gather_buckets" of them
// gather an embedding's rows: "gathered_values" parameters, of which rank 0
// sent "gathered_bytes" in the last step), and the communication:
// "exposed_comm_ms" (the time
// the process that finished backward last spent on the sums: starting and
// moving them inside backward, and waiting for them after it; median over the
// steps; the others also wait for it), "comm_alone_ms" (the
// same buckets summed alone, blocking, back to back; an embedding's bucket
// gathers as many bytes as its rows took in the last step) and
// "hidden_fraction" = 1 − exposed ÷ alone.
//
//   mpirun -np 2 bench_step --model convpool --threads 1 --set batch=50
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "bench/model_steps/bench_flags.h"
#include "bench/step_timing.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/observer.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/dist/gradient_reducer.h"
#include "rmsgrad/dist/process_group.h"

using namespace rg;

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  bench::ModelFlags flags;
  std::string norm = "rmsnorm", impl = "fused", dump;
  bool recipe = false;
  int steps = 5;
  CLI::App app{"One training step of a model, timed alone", "bench_step"};
  bench::add_model_flags(app, flags);
  app.add_option("--norm", norm, "the normalization");
  app.add_option("--norm-impl", impl, "fused kernels or composed from ops")
      ->check(CLI::IsMember({"fused", "composed"}));
  app.add_option("--steps", steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--dump", dump,
                 "write the check for the PyTorch and JAX twins to this folder instead (rnnsearch, transformer, "
                 "convpool, lm)");
  app.add_flag("--recipe", recipe,
               "print the model's settings (its recipe, experiments/common/recipes.h, with any --set) as one JSON "
               "object, and exit");
  double bucket_mb = dist::GradientReducer::kDefaultBucketBytes / 1048576.0;
  app.add_option("--bucket-mb", bucket_mb, "under mpirun: MiB of gradients per bucket")->check(CLI::PositiveNumber);
  dist::ProcessGroup& group = dist::ProcessGroup::world();
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  try {
    set_num_threads(flags.threads);
    set_product_precision(parse_precision(flags.precision));
    bench::Sizes sizes = flags.sizes();
    // The twins' checks draw no random masks (the language model has no dropout).
    if (!dump.empty() && flags.model != "lm") sizes.set("dropout=0");
    if (!dump.empty() && flags.model == "convpool") sizes.set("input_noise=0");
    const NormOptions choice{.kind = parse_norm_kind(norm), .impl = parse_norm_impl(impl)};
    std::unique_ptr<bench::ModelStep> step = bench::make_model_step(flags.model, choice, sizes);
    if (recipe) {
      std::string members = sizes.json();
      members.resize(members.size() - 2);  // the last ", "
      std::printf("{\"model\": \"%s\", %s}\n", flags.model.c_str(), members.c_str());
      return 0;
    }
    if (!dump.empty()) {
      step->dump(dump);
      return 0;
    }
    if (group.distributed()) step->enable_data_parallel(group, static_cast<int64_t>(bucket_mb * 1048576.0));
    // The time each step spends in the calls that move the gradients' sums
    // (inside backward and after it), measured through the observer.
    struct CommunicationClock : Observer {
      std::chrono::steady_clock::time_point started;
      double seconds = 0.0;
      void communication_started() override { started = std::chrono::steady_clock::now(); }
      void communication_finished() override {
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      }
    } clock;
    std::vector<double> waits;
    if (step->reducer()) install_observer(&clock);
    const std::vector<double> times = bench::time_steps([&] {
      clock.seconds = 0.0;
      step->run();
      if (step->reducer()) waits.push_back(clock.seconds);
    }, flags.warmup, steps);
    install_observer(nullptr);
    check(std::isfinite(step->loss()), "bench_step: the loss is {}", step->loss());
    std::string communication;
    if (group.distributed()) {
      // The same buckets summed alone, back to back, after a barrier; a
      // bucket that gathers rows gathers as many bytes as it sent last step.
      const auto summaries = step->reducer()->buckets();
      std::vector<std::vector<float>> buckets;
      for (const auto& b : summaries) buckets.emplace_back(b.gathers_rows ? 0 : static_cast<size_t>(b.values), 1.0f);
      std::vector<double> alone;
      for (int r = 0; r < std::max(3, steps); ++r) {
        group.barrier();
        const auto start = std::chrono::steady_clock::now();
        for (size_t b = 0; b < buckets.size(); ++b)
          if (summaries[b].gathers_rows)
            group.all_gather(std::string(static_cast<size_t>(summaries[b].bytes_sent), 'x'));
          else
            group.sum(buckets[b]);
        alone.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      std::sort(alone.begin(), alone.end());
      // A process's wait after backward also holds the time it waits for a
      // slower process to finish its backward. The last process to finish
      // waits only for the communication itself: per step, the smallest time
      // over the processes is the exposed communication.
      std::vector<float> mine(waits.begin(), waits.end());
      const std::vector<float> all =
          group.all_gather(mine, std::vector<int64_t>(group.size(), static_cast<int64_t>(mine.size())));
      std::vector<double> exposed(mine.size());
      for (size_t s = 0; s < mine.size(); ++s) {
        exposed[s] = all[s];
        for (int r = 1; r < group.size(); ++r) exposed[s] = std::min<double>(exposed[s], all[r * mine.size() + s]);
      }
      std::sort(exposed.begin(), exposed.end());
      const double wait_ms = 1e3 * exposed[exposed.size() / 2];
      const double alone_ms = 1e3 * group.sum(alone[alone.size() / 2]) / group.size();
      int64_t gather_buckets = 0, gathered_values = 0, gathered_bytes = 0;
      for (const auto& b : summaries)
        if (b.gathers_rows) ++gather_buckets, gathered_values += b.values, gathered_bytes += b.bytes_sent;
      communication = fmt::format("\"processes\": {}, \"buckets\": {}, \"gather_buckets\": {}, "
                                  "\"gathered_values\": {}, \"gathered_bytes\": {}, \"exposed_comm_ms\": {:.3f}, "
                                  "\"comm_alone_ms\": {:.3f}, \"hidden_fraction\": {:.3f}, ",
                                  group.size(), buckets.size(), gather_buckets, gathered_values, gathered_bytes,
                                  wait_ms, alone_ms, 1.0 - wait_ms / alone_ms);
    }
    if (!group.writer()) return 0;
    std::printf("{\"impl\": \"rmsgrad\", \"model\": \"%s\", \"norm\": \"%s\", \"norm_impl\": \"%s\", "
                "\"threads\": %d, \"precision\": \"%s\", %s%s\"parameters\": %lld, \"ms_per_step\": %.3f, \"ms_min\": %.3f}\n",
                flags.model.c_str(), norm.c_str(), impl.c_str(), flags.threads, flags.precision.c_str(), communication.c_str(),
                sizes.json().c_str(),
                static_cast<long long>(step->model().parameter_count()), bench::median_of(times), times.front());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_step: %s\n", e.what());
    if (group.distributed()) group.abort(1);
    return 1;
  }
}
