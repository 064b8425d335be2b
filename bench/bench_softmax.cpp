// The attention softmax (autograd/attention_ops.h: scale, key mask and causal
// mask fused into the softmax) against the plain softmax over the last axis
// of the same scores, forward and forward+backward, in interleaved rounds so
// that whatever else the machine does falls on both alike. One JSON object
// per op and shape, then the ratios to softmax:
//   {"op": "attention_softmax_causal", "shape": [32, 4, 64, 64], "threads": 1, "fwd_ms": .., "fwd_bwd_ms": ..}
// Times are medians over the rounds of each round's median.
//
// Usage: bench_softmax [--threads N] [--repeats R] [--rounds K]
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/op_timing.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  bench::OpFlags flags;
  flags.repeats = 10;
  int rounds = 5;
  CLI::App app{"the attention softmax against the plain softmax", "bench_softmax"};
  bench::add_op_flags(app, flags, /*with_norm_impl=*/false);
  app.add_option("--rounds", rounds, "interleaved rounds; the median over rounds is reported")
      ->check(CLI::PositiveNumber);
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  set_num_threads(flags.threads);

  for (const Shape& shape : {Shape{32, 4, 64, 64}, Shape{32, 4, 256, 256}}) {
    Generator gen(0);
    const Tensor scores = normal(shape, 0.0f, 3.0f, gen), dy = normal(shape, 0.0f, 1.0f, gen);
    // Every batch item hides its last quarter of keys (padding).
    const int64_t batch = shape[0], keys = shape[3];
    Tensor key_mask = Tensor::ones(Shape{batch, keys});
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = keys - keys / 4; j < keys; ++j) key_mask.data()[b * keys + j] = 0.0f;
    const float scale = 1.0f / std::sqrt(64.0f);
    Var x(scores, true);
    const std::vector<std::pair<std::string, std::function<Var()>>> ops = {
        {"softmax", [&] { return softmax(x, -1); }},
        {"attention_softmax", [&] { return attention_softmax(x, scale); }},
        {"attention_softmax_key_mask", [&] { return attention_softmax(x, scale, key_mask); }},
        {"attention_softmax_causal", [&] { return attention_softmax(x, scale, {}, true); }},
    };
    std::map<std::string, std::vector<double>> fwd, fwd_bwd;
    for (int round = 0; round < rounds; ++round)
      for (size_t k = 0; k < ops.size(); ++k) {
        const auto& [name, op] = ops[(k + round) % ops.size()];  // a different order each round
        const bench::ForwardBackwardMs ms = bench::time_forward_backward(op, {x}, dy, flags.repeats);
        fwd[name].push_back(ms.fwd);
        fwd_bwd[name].push_back(ms.fwd_bwd);
      }
    const double base_fwd = bench::median_of(fwd["softmax"]), base_all = bench::median_of(fwd_bwd["softmax"]);
    for (const auto& [name, op] : ops) {
      const double f = bench::median_of(fwd[name]), fb = bench::median_of(fwd_bwd[name]);
      std::printf(
          "{\"op\": \"%s\", \"shape\": [%lld, %lld, %lld, %lld], \"threads\": %d, \"fwd_ms\": %.4f, \"fwd_bwd_ms\": "
          "%.4f, \"fwd_vs_softmax\": %.3f, \"fwd_bwd_vs_softmax\": %.3f}\n",
          name.c_str(), (long long)shape[0], (long long)shape[1], (long long)shape[2], (long long)shape[3],
          flags.threads, f, fb, f / base_fwd, fb / base_all);
      std::fflush(stdout);
    }
  }
  return 0;
}
