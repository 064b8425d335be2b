// A user's own training loop, timed: a character GRU language model trained
// with the calls of the README's program only (a Module, Adam, zero_grad,
// backward, step) and set_num_threads. By default nothing about sharing the
// machine is called, and the library does nothing about it by itself;
// --polite first calls restart_with_polite_threads (short OpenMP spins), and
// --follow makes a FreeCoreFollower fit the threads to the free cores
// between steps (core/polite_threads.h). bench/bench_own_loop.sh runs it
// alone and beside a busy process and reports the ratio.
//
//   bench_own_loop [--threads 2] [--steps 30] [--warmup 5] [--polite] [--follow]
//
// Prints one JSON object: {"threads": 2, "steps": 30, "polite": false, "follow": false, "ms_per_step": ...,
// "ms_min": ...}.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string_view>
#include <vector>

#include "bench/bench_cli.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

// Embedding (32) → GRU (192 units, RMSNorm) → Linear over 64 characters: the
// issue's kind of model, whose step is thousands of small parallel regions.
class CharGRU : public Module {
 public:
  explicit CharGRU(int64_t vocab) {
    register_module("embedding", embedding, std::make_shared<Embedding>(vocab, 32));
    register_module("gru", gru, std::make_shared<GRU>(32, 192, NormOptions{.kind = NormKind::RMSNorm}));
    register_module("output", output, std::make_shared<Linear>(192, vocab));
  }
  Var forward(const Indices& ids) { return output->forward(gru->run(embedding->forward(ids), {}, {}).states); }

  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<GRU> gru;
  std::shared_ptr<Linear> output;
};

}  // namespace

int main(int argc, char** argv) {
  // Read before CLI11 parses, which it must not do twice: the restart re-runs main().
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--polite") rg::restart_with_polite_threads(argv);
  int threads = 2, steps = 30, warmup = 5;
  bool polite = false, follow = false;
  CLI::App app{"a user's own training loop, timed", "bench_own_loop"};
  app.add_option("--threads", threads, "threads")->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  app.add_flag("--polite", polite, "restart with short OpenMP spins first (restart_with_polite_threads)");
  app.add_flag("--follow", follow, "between steps, use only the cores other processes leave free");
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  set_num_threads(threads);

  const int64_t vocab = 64, window = 64, batch = 32;
  Generator gen(0);
  CharGRU model(vocab);
  Adam adam(model.named_parameters(), {.lr = 2e-3});
  FreeCoreFollower follower;
  std::vector<double> ms;
  for (int step = 0; step < warmup + steps; ++step) {
    if (follow) follower.follow();
    std::vector<int32_t> text(static_cast<size_t>((window + 1) * batch));
    for (int32_t& c : text) c = static_cast<int32_t>(gen.randint(vocab));
    Indices inputs(Shape{window, batch}, std::vector<int32_t>(text.begin(), text.begin() + window * batch));
    Indices targets(Shape{window * batch}, std::vector<int32_t>(text.begin() + batch, text.end()));
    const auto start = std::chrono::steady_clock::now();
    adam.zero_grad();
    Var loss = cross_entropy(reshape(model.forward(inputs), {window * batch, vocab}), targets);
    loss.backward();
    adam.step();
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (step >= warmup) ms.push_back(took);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"threads\": %d, \"steps\": %d, \"polite\": %s, \"follow\": %s, \"ms_per_step\": %.3f, "
              "\"ms_min\": %.3f}\n", threads, steps, polite ? "true" : "false", follow ? "true" : "false",
              ms[ms.size() / 2], ms.front());
  return 0;
}
