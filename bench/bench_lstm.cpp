// Times one LSTM cell step, forward and forward+backward from dL/dh, at
// batch 64 with input = hidden = 240 and with input 240, hidden 1024, plain
// and with each normalization; and, per configuration, the two fused
// pointwise ops alone (lstm_cell_state, then lstm_hidden on that c, with a
// mask). One JSON object per line: {"op": "lstm_cell" or "lstm_pointwise",
// "norm": .., "batch": .., "input": .., "hidden": .., "threads": ..,
// "fwd_ms": .., "fwd_bwd_ms": ..}; medians.
//
// Usage: bench_lstm [--threads N] [--repeats R] [--norm-impl fused|composed]
#include <cstdio>

#include "rmsgrad/autograd/lstm_ops.h"
#include "rmsgrad/core/polite_threads.h"
#include "bench/op_timing.h"
#include "rmsgrad/layers/lstm.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

void print(const bench::OpFlags& flags, const char* op, const char* norm, int64_t batch, int64_t input,
           int64_t hidden, const bench::ForwardBackwardMs& ms) {
  std::printf(
      "{\"op\": \"%s\", \"norm\": \"%s\", \"norm_impl\": \"%s\", \"batch\": %lld, \"input\": %lld, \"hidden\": %lld, "
      "\"threads\": %d, \"fwd_ms\": %.4f, \"fwd_bwd_ms\": %.4f}\n",
      op, norm, flags.norm_impl.c_str(), (long long)batch, (long long)input, (long long)hidden, flags.threads, ms.fwd,
      ms.fwd_bwd);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  bench::OpFlags flags;
  CLI::App app{"one LSTM cell step and its fused pointwise ops", "bench_lstm"};
  bench::add_op_flags(app, flags);
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  set_num_threads(flags.threads);
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
      norm.impl = flags.impl();
      LSTMCell cell(input, hidden, norm, gen);
      Var x(xv, true), h(hv, true), c(cv, true);
      const auto ms =
          bench::time_forward_backward([&] { return cell.forward(x, {h, c}).h; }, {x, h, c}, dy, flags.repeats);
      print(flags, "lstm_cell", name, batch, input, hidden, ms);
    }

    // The fused pointwise ops alone: gates [B, 4H] → c → h, with a mask
    // (one padded row in eight), as in a padded batch.
    Tensor gv = normal(Shape{batch, 4 * hidden}, 0.0f, 1.0f, gen);
    Tensor mask = Tensor::ones(Shape{batch});
    for (int64_t b = 7; b < batch; b += 8) mask.data()[b] = 0.0f;
    Var gates(gv, true), h(hv, true), c(cv, true);
    const int op_repeats = 10 * flags.repeats;  // microseconds each: more samples
    const auto ms = bench::time_forward_backward(
        [&] { return lstm_hidden(gates, lstm_cell_state(gates, c, mask), h, mask); }, {gates, h, c}, dy, op_repeats);
    print(flags, "lstm_pointwise", "none", batch, input, hidden, ms);
  }
  return 0;
}
