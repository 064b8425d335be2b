// Times one GRU cell step, forward and forward+backward (batch 80, input
// 512, hidden 1024 by default), plain and with each normalization. One JSON
// object per line: {"op": "gru_cell", "norm": .., "batch": .., "input": ..,
// "hidden": .., "threads": .., "fwd_ms": .., "fwd_bwd_ms": ..}; medians.
//
// Usage: bench_gru [--threads N] [--repeats R] [--norm-impl fused|composed]
#include <cstdio>

#include "bench/op_timing.h"
#include "rmsgrad/layers/gru.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  bench::OpFlags flags;
  CLI::App app{"one GRU cell step, plain and with each normalization", "bench_gru"};
  bench::add_op_flags(app, flags);
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  const int64_t batch = 80, input = 512, hidden = 1024;
  set_num_threads(flags.threads);
  Generator gen(0);
  Tensor xv = normal(Shape{batch, input}, 0.0f, 1.0f, gen);
  Tensor hv = normal(Shape{batch, hidden}, 0.0f, 0.5f, gen);
  Tensor dy = normal(Shape{batch, hidden}, 0.0f, 1.0f, gen);
  for (const char* name : {"none", "layernorm", "rmsnorm", "prmsnorm"}) {
    NormOptions norm;
    norm.kind = parse_norm_kind(name);
    norm.impl = flags.impl();
    GRUCell cell(input, hidden, norm, gen);
    Var x(xv, true), h(hv, true);
    const auto ms = bench::time_forward_backward([&] { return cell.forward(x, h); }, {x, h}, dy, flags.repeats);
    std::printf(
        "{\"op\": \"gru_cell\", \"norm\": \"%s\", \"norm_impl\": \"%s\", \"batch\": %lld, \"input\": %lld, "
        "\"hidden\": %lld, \"threads\": %d, \"fwd_ms\": %.4f, \"fwd_bwd_ms\": %.4f}\n",
        name, flags.norm_impl.c_str(), (long long)batch, (long long)input, (long long)hidden, flags.threads, ms.fwd,
        ms.fwd_bwd);
    std::fflush(stdout);
  }
  return 0;
}
