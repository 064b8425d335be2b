// Flat over long runs: trains one model
// for thousands of steps on batches whose shape changes every step, the way
// a translation driver's length-bucketed batches do, and checks that the
// resident size stops growing after the warm-up and that the step time stays
// constant.
//
// Each step draws a batch size and source and target lengths at random
// (uniform in [batch/2, batch] and [len/4, len]); every --report steps it
// prints one JSON line with the resident size (VmRSS), the allocator's cache,
// and the median step time of the steps since the last line. At the end one
// line sums up:
//
//   peak_after_warmup_mb  VmHWM after --warmup steps: the most the process
//                         has held by then (the largest shapes have been seen
//                         several times over)
//   peak_end_mb           VmHWM after the last step
//   growth_pct            (peak_end − peak_after_warmup) / peak_after_warmup:
//                         how much more than during the warm-up any later
//                         step needed at its peak
//   rss_after_warmup_mb, rss_end_mb   VmRSS at those two moments (these move
//                         by ±2% with the shape of the last batch)
//   ms_first, ms_last     median step time (process CPU time, which on a
//                         shared machine does not count the time other jobs
//                         hold the cores; wall time is printed per window
//                         too) of the first and the last window after the
//                         warm-up
//   flat                  growth_pct < 1 and |ms_last / ms_first − 1| < 10%
//
// It exits with 1 when not flat. The defaults are a small RNNSearch (about
// 10 ms a step) for 10,000 steps; --model reader varies the document length.
//
// Usage: bench_long_run [--model rnnsearch|reader] [--steps N] [--warmup W] [--report R]
//                       [--batch B] [--len L] [--hidden H] [--vocab V] [--threads T] [--seed S]
// (bench_long_run --help lists them with their defaults.)
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "bench/model_steps/model_step.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/rmsgrad.h"
#include "bench/process_memory.h"
#include "rmsgrad/core/allocator.h"

using namespace rg;

namespace {


double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  std::string model = "rnnsearch";
  int64_t steps = 10000, warmup = 1000, report = 500, batch = 32, len = 30, hidden = 32, vocab = 500;
  int threads = 1;
  uint64_t seed = 7;
  CLI::App app{"Trains one model on batches of changing shape for thousands of steps and checks that memory and "
               "step time stay flat", "bench_long_run"};
  app.add_option("--model", model, "the model: rnnsearch, or reader (varies the document length)")
      ->check(CLI::IsMember({"rnnsearch", "reader"}))->capture_default_str();
  app.add_option("--steps", steps, "steps in all")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--warmup", warmup, "steps before the first measurement")->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--report", report, "steps per printed line")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--batch", batch, "the largest batch; each is drawn from [batch/2, batch]")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20))->capture_default_str();
  app.add_option("--len", len, "the longest sequence; each is drawn from [len/4, len]")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20))->capture_default_str();
  app.add_option("--hidden", hidden, "embedding and hidden size")->check(CLI::Range(int64_t{1}, int64_t{1} << 16))
      ->capture_default_str();
  app.add_option("--vocab", vocab, "vocabulary size")->check(CLI::Range(int64_t{5}, int64_t{1} << 24))
      ->capture_default_str();
  app.add_option("--threads", threads, "threads")->check(CLI::Range(1, kMaxThreads))->capture_default_str();
  app.add_option("--seed", seed, "seed of the drawn shapes")->capture_default_str();
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  try {
    check(steps > warmup, "--steps {} must be more than --warmup {}", steps, warmup);
    set_num_threads(threads);
    bench::Sizes sizes;
    for (const auto& [key, value] : {std::pair<std::string, int64_t>{"batch", batch}, {"vocab", vocab},
                                     {"embed", hidden}, {"hidden", hidden}})
      sizes.set(key + "=" + std::to_string(value));
    sizes.set((model == "reader" ? "doc_len=" : "src_len=") + std::to_string(len));
    std::unique_ptr<bench::ModelStep> m = bench::make_model_step(model, {.kind = NormKind::RMSNorm}, sizes);
    Generator shapes(seed);
    auto draw = [&](int64_t low, int64_t high) { return low + static_cast<int64_t>(shapes.randint(high - low + 1)); };

    std::vector<double> window, cpu_window;
    double rss_after_warmup = 0.0, peak_after_warmup = 0.0, ms_first = 0.0, ms_last = 0.0;
    for (int64_t step = 1; step <= steps; ++step) {
      const int64_t b = draw(batch / 2, batch), src = draw(len / 4, len), tgt = draw(len / 4, len);
      m->reshape(b, src, model == "reader" ? 20 : tgt);
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = cpu_ms();
      m->run();
      cpu_window.push_back(cpu_ms() - cpu_start);
      window.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      if (step == warmup) {
        rss_after_warmup = bench::rss_mb();
        peak_after_warmup = bench::status_mb("VmHWM");
        window.clear();  // the time windows start after the warm-up
        cpu_window.clear();
      }
      if ((step % report == 0 || step == steps) && !window.empty()) {
        const double ms = median(cpu_window);
        if (step > warmup) {
          if (ms_first == 0.0) ms_first = ms;
          ms_last = ms;
        }
        std::printf("{\"step\": %lld, \"rss_mb\": %.1f, \"peak_mb\": %.1f, \"cached_mb\": %.1f, \"cpu_ms_per_step\": %.3f, \"wall_ms_per_step\": %.3f}\n",
                    static_cast<long long>(step), bench::rss_mb(), bench::status_mb("VmHWM"),
                    static_cast<double>(allocator_stats().cached_bytes) / (1024.0 * 1024.0), ms, median(window));
        std::fflush(stdout);
        window.clear();
        cpu_window.clear();
      }
    }
    const double rss_end = bench::rss_mb(), peak_end = bench::status_mb("VmHWM");
    const double growth = 100.0 * (peak_end - peak_after_warmup) / peak_after_warmup;
    const bool flat = growth < 1.0 && std::fabs(ms_last / ms_first - 1.0) < 0.10;
    std::printf("{\"impl\": \"rmsgrad\", \"model\": \"%s\", \"steps\": %lld, \"warmup\": %lld, \"batch\": %lld, "
                "\"len\": %lld, \"hidden\": %lld, \"vocab\": %lld, \"threads\": %d, \"peak_after_warmup_mb\": %.1f, "
                "\"peak_end_mb\": %.1f, \"growth_pct\": %.3f, \"rss_after_warmup_mb\": %.1f, \"rss_end_mb\": %.1f, "
                "\"ms_first\": %.3f, \"ms_last\": %.3f, \"flat\": %s}\n",
                model.c_str(), static_cast<long long>(steps), static_cast<long long>(warmup),
                static_cast<long long>(batch), static_cast<long long>(len), static_cast<long long>(hidden),
                static_cast<long long>(vocab), threads, peak_after_warmup, peak_end, growth, rss_after_warmup, rss_end,
                ms_first, ms_last,
                flat ? "true" : "false");
    return flat ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", one_line_escaped(e.what()).c_str());
    return 1;
  }
}
