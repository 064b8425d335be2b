// A user's own training loop, timed: a character GRU language model trained
// with the calls of the README's program only (a Module, Adam, zero_grad,
// backward, step) and set_num_threads. Nothing about sharing the machine is
// called; whatever the library does for a program that shares its cores, it
// does by itself. bench/bench_own_loop.sh runs it alone and beside a busy
// process and reports the ratio.
//
//   bench_own_loop [--threads 2] [--steps 30] [--warmup 5]
//
// Prints one JSON object: {"threads": 2, "steps": 30, "ms_per_step": ..., "ms_min": ...}.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
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
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  int threads = 2, steps = 30, warmup = 5;
  CLI::App app{"a user's own training loop, timed", "bench_own_loop"};
  app.add_option("--threads", threads, "threads")->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::NonNegativeNumber);
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  set_num_threads(threads);

  const int64_t vocab = 64, window = 64, batch = 32;
  Generator gen(0);
  CharGRU model(vocab);
  Adam adam(model.named_parameters(), {.lr = 2e-3});
  std::vector<double> ms;
  for (int step = 0; step < warmup + steps; ++step) {
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
  std::printf("{\"threads\": %d, \"steps\": %d, \"ms_per_step\": %.3f, \"ms_min\": %.3f}\n", threads, steps,
              ms[ms.size() / 2], ms.front());
  return 0;
}
