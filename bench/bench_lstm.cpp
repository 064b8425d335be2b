// Times one LSTM cell step, forward and forward+backward from dL/dh, at
// batch 64 with input = hidden = 240 and with input 240, hidden 1024, plain
// and with each normalization; and, per configuration, the two fused
// pointwise ops alone (lstm_cell_state, then lstm_hidden on that c, with a
// mask). One JSON object per line: {"op": "lstm_cell" or "lstm_pointwise",
// "norm": .., "batch": .., "input": .., "hidden": .., "threads": ..,
// "fwd_ms": .., "fwd_bwd_ms": ..}; medians.
//
// Usage: bench_lstm [--threads N] [--repeats R] [--norm-impl fused|composed]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "autograd/lstm_ops.h"
#include "layers/lstm.h"
#include "rmsgrad.h"

using namespace rg;

namespace {

NormImpl g_impl = NormImpl::Fused;  // --norm-impl

double median_ms(int repeats, const std::function<void()>& body) {
  for (int i = 0; i < 3; ++i) body();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void print(const char* op, const char* norm, int64_t batch, int64_t input, int64_t hidden, int threads, double fwd,
           double fwd_bwd) {
  std::printf(
      "{\"op\": \"%s\", \"norm\": \"%s\", \"norm_impl\": \"%s\", \"batch\": %lld, \"input\": %lld, \"hidden\": %lld, "
      "\"threads\": %d, \"fwd_ms\": %.4f, \"fwd_bwd_ms\": %.4f}\n",
      op, norm, norm_impl_name(g_impl).c_str(), (long long)batch, (long long)input, (long long)hidden, threads, fwd,
      fwd_bwd);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, repeats = 30;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc)
      threads = std::stoi(argv[++i]);
    else if (a == "--repeats" && i + 1 < argc)
      repeats = std::stoi(argv[++i]);
    else if (a == "--norm-impl" && i + 1 < argc)
      g_impl = parse_norm_impl(argv[++i]);
    else {
      std::fprintf(stderr,
                   "bench_lstm: unknown argument '%s' (usage: bench_lstm [--threads N] [--repeats R] [--norm-impl "
                   "fused|composed])\n",
                   a.c_str());
      return 2;
    }
  }
  set_num_threads(threads);
  const int64_t batch = 64;
  for (auto [input, hidden] : {std::pair<int64_t, int64_t>{240, 240}, {240, 1024}}) {
    Generator gen(0);
    Tensor xv = normal(Shape{batch, input}, 0.0f, 1.0f, gen);
    Tensor hv = normal(Shape{batch, hidden}, 0.0f, 0.5f, gen);
    Tensor cv = normal(Shape{batch, hidden}, 0.0f, 0.5f, gen);
    Tensor dy = normal(Shape{batch, hidden}, 0.0f, 1.0f, gen);
    for (const char* name : {"none", "layernorm", "rmsnorm"}) {
      NormOptions norm;
      norm.kind = parse_norm_kind(name);
      norm.impl = g_impl;
      LSTMCell cell(input, hidden, norm, gen);
      Var x(xv, true), h(hv, true), c(cv, true);
      double fwd = median_ms(repeats, [&] {
        NoGradGuard no_grad;
        LSTMState y = cell.forward(x, {h, c});
      });
      double fwd_bwd = median_ms(repeats, [&] {
        x.node()->grad = Tensor();
        h.node()->grad = Tensor();
        c.node()->grad = Tensor();
        LSTMState y = cell.forward(x, {h, c});
        tape().backward(y.h, dy);
        tape().clear();
      });
      print("lstm_cell", name, batch, input, hidden, threads, fwd, fwd_bwd);
    }

    // The fused pointwise ops alone: gates [B, 4H] → c → h, with a mask
    // (one padded row in eight), as in a padded batch.
    Tensor gv = normal(Shape{batch, 4 * hidden}, 0.0f, 1.0f, gen);
    Tensor mask = Tensor::ones(Shape{batch});
    for (int64_t b = 7; b < batch; b += 8) mask.data()[b] = 0.0f;
    Var gates(gv, true), h(hv, true), c(cv, true);
    const int op_repeats = 10 * repeats;  // microseconds each: more samples
    double fwd = median_ms(op_repeats, [&] {
      NoGradGuard no_grad;
      Var cn = lstm_cell_state(gates, c, mask);
      Var hn = lstm_hidden(gates, cn, h, mask);
    });
    double fwd_bwd = median_ms(op_repeats, [&] {
      gates.node()->grad = Tensor();
      h.node()->grad = Tensor();
      c.node()->grad = Tensor();
      Var cn = lstm_cell_state(gates, c, mask);
      Var hn = lstm_hidden(gates, cn, h, mask);
      tape().backward(hn, dy);
      tape().clear();
    });
    print("lstm_pointwise", "none", batch, input, hidden, threads, fwd, fwd_bwd);
  }
  return 0;
}
