// What a training step of each paper model holds in memory.
//
// For each model (bench/model_steps) at its benchmark sizes and at the
// reproduction report's real-data sizes, one child process (this program run
// again with --model and --sizes, so that every figure starts from a fresh process)
// trains a few steps and prints one JSON line (--sizes longest: RNNSearch's
// longest Multi30k batch, 53 × 49 subwords; --sizes worst: the longest the
// driver admits, 80 × 80):
//
//   peak_rss_mb        the process's peak resident size (VmHWM in /proc/self/status)
//   rss_mb             resident size after the last step (VmRSS)
//   start_rss_mb       resident size before the model was built (program, libraries)
//   peak_live_mb       the peak of live tensor bytes during the last step
//   cached_mb          free blocks the allocator keeps after the last step
//   misses_last_step, evictions_last_step
//                      blocks the last step mapped afresh and gave back to the
//                      system: 0 and 0 once a model's cycle of sizes is cached
//   held_at_peak       the live bytes at that peak by what holds them
//                      (bench/allocation_accounting.h):
//                      "forward:<op>" is what an op's forward left alive (its
//                      output on the tape and whatever its backward keeps),
//                      "gradients" the gradients of intermediate nodes,
//                      "parameter gradients", "parameters", "optimizer state"
//                      (Adam's moments, and the clipping's workspace), "inputs"
//                      (the batch), "backward workspace" (temporaries of a
//                      backward kernel), "pending" (allocated by a forward op
//                      that had not yet recorded itself)
//
// Usage: bench_memory [--model rnnsearch|reader|order_embedding|convpool|all] [--sizes bench|real|longest|worst|all]
//                     [--norm N] [--threads T] [--steps S]   (bench_memory --help lists the defaults)
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench/allocation_accounting.h"
#include "bench/bench_cli.h"
#include "bench/memory_sizes.h"
#include "bench/process_memory.h"
#include "rmsgrad/core/allocator.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/rmsgrad.h"

extern char** environ;

using namespace rg;

namespace {


double mb(size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

struct Flags {
  std::string model = "all", sizes = "all", norm = "rmsnorm";
  int threads = 1, steps = 3;
};

// Runs one model in this process and prints its line.
void measure(const Flags& f) {
  const double start_rss = bench::status_mb("VmRSS");
  bench::AllocationAccounting accounting;
  set_num_threads(f.threads);
  bench::Sizes sizes = bench::memory_sizes(f.sizes, f.model);
  std::unique_ptr<bench::ModelStep> m = bench::make_model_step(f.model, {.kind = parse_norm_kind(f.norm)}, sizes);
  for (int i = 0; i + 1 < f.steps; ++i) m->run();
  accounting.reset_peak();
  const AllocatorStats before = allocator_stats();
  m->run();

  std::string held;
  const bench::AllocationBreakdown b = accounting.breakdown();
  std::vector<bench::TaggedBytes> tags = b.tags;
  std::sort(tags.begin(), tags.end(),
            [](const bench::TaggedBytes& x, const bench::TaggedBytes& y) { return x.at_peak > y.at_peak; });
  for (const bench::TaggedBytes& t : tags)
    if (t.at_peak > 0) held += fmt::format("{}\"{}\": {:.1f}", held.empty() ? "" : ", ", t.tag, mb(t.at_peak));
  const double peak_live = mb(b.peak);
  const AllocatorStats stats = allocator_stats();
  std::printf("{\"impl\": \"rmsgrad\", \"model\": \"%s\", \"sizes\": \"%s\", \"norm\": \"%s\", "
              "\"threads\": %d, %s\"parameters\": %lld, "
              "\"steps\": %d, \"peak_rss_mb\": %.1f, \"rss_mb\": %.1f, \"start_rss_mb\": %.1f, "
              "\"peak_live_mb\": %.1f, \"cached_mb\": %.1f, \"misses_last_step\": %zu, "
              "\"evictions_last_step\": %zu, \"held_at_peak\": {%s}}\n",
              f.model.c_str(), f.sizes.c_str(), f.norm.c_str(), f.threads, sizes.json().c_str(),
              static_cast<long long>(m->model().parameter_count()), f.steps, bench::status_mb("VmHWM"), bench::status_mb("VmRSS"), start_rss,
              peak_live, mb(stats.cached_bytes), stats.misses - before.misses, stats.evictions - before.evictions,
              held.c_str());
  std::fflush(stdout);
}

// Runs this program again for one model and size; returns its exit status.
int run_child(const char* self, const Flags& f, const std::string& model, const std::string& sizes) {
  std::vector<std::string> args = {self,       "--model",   model, "--sizes", sizes,
                                   "--norm",   f.norm,      "--threads", std::to_string(f.threads),
                                   "--steps",  std::to_string(f.steps)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) return 1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  Flags f;
  CLI::App app{"What a training step of each paper model holds in memory, each measured in a fresh process",
               "bench_memory"};
  app.add_option("--model", f.model, "rnnsearch, reader, order_embedding, convpool, or all")
      ->check(CLI::IsMember({"rnnsearch", "reader", "order_embedding", "convpool", "all"}))->capture_default_str();
  app.add_option("--sizes", f.sizes, "bench, real, longest, worst, or all (bench and real)")
      ->check(CLI::IsMember({"bench", "real", "longest", "worst", "all"}))->capture_default_str();
  app.add_option("--norm", f.norm, "the norm of every model")->capture_default_str();
  app.add_option("--threads", f.threads, "threads")->check(CLI::Range(1, kMaxThreads))->capture_default_str();
  app.add_option("--steps", f.steps, "steps; the last is measured")->check(CLI::Range(1, 1000))
      ->capture_default_str();
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  try {
    parse_norm_kind(f.norm);  // an unknown norm fails here, before any child starts
    if (f.model != "all" && f.sizes != "all") {
      measure(f);
      return 0;
    }
    const std::vector<std::string> models =
        f.model == "all" ? std::vector<std::string>{"rnnsearch", "reader", "order_embedding", "convpool"}
                         : std::vector<std::string>{f.model};
    const std::vector<std::string> sizes =
        f.sizes == "all" ? std::vector<std::string>{"bench", "real"} : std::vector<std::string>{f.sizes};
    int failures = 0;
    for (const std::string& model : models)
      for (const std::string& size : sizes) {
        // ConvPool-CNN-C and the order-embedding model use their benchmark sizes in the README too.
        if (size == "real" && (model == "convpool" || model == "order_embedding") && f.sizes == "all") continue;
        failures += run_child(argv[0], f, model, size) != 0;
      }
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", one_line_escaped(e.what()).c_str());
    return 1;
  }
}
