// Times one GRU cell step, forward and forward+backward (batch 80, input
// 512, hidden 1024 by default), plain and with each normalization. One JSON
// object per line: {"op": "gru_cell", "norm": .., "batch": .., "input": ..,
// "hidden": .., "threads": .., "fwd_ms": .., "fwd_bwd_ms": ..}; medians.
//
// Usage: bench_gru [--threads N] [--repeats R] [--norm-impl fused|composed]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "layers/gru.h"
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

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, repeats = 30;
  const int64_t batch = 80, input = 512, hidden = 1024;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else if (a == "--norm-impl" && i + 1 < argc)
      g_impl = parse_norm_impl(argv[++i]);
    else {
      std::fprintf(stderr,
                   "bench_gru: unknown argument '%s' (usage: bench_gru [--threads N] [--repeats R] [--norm-impl "
                   "fused|composed])\n",
                   a.c_str());
      return 2;
    }
  }
  set_num_threads(threads);
  Generator gen(0);
  Tensor xv = normal(Shape{batch, input}, 0.0f, 1.0f, gen);
  Tensor hv = normal(Shape{batch, hidden}, 0.0f, 0.5f, gen);
  Tensor dy = normal(Shape{batch, hidden}, 0.0f, 1.0f, gen);
  for (const char* name : {"none", "layernorm", "rmsnorm", "prmsnorm"}) {
    NormOptions norm;
    norm.kind = parse_norm_kind(name);
    norm.impl = g_impl;
    GRUCell cell(input, hidden, norm, gen);
    Var x(xv, true), h(hv, true);
    double fwd = median_ms(repeats, [&] {
      NoGradGuard no_grad;
      Var y = cell.forward(x, h);
    });
    double fwd_bwd = median_ms(repeats, [&] {
      x.node()->grad = Tensor();
      h.node()->grad = Tensor();
      Var y = cell.forward(x, h);
      tape().backward(y, dy);
      tape().clear();
    });
    std::printf(
        "{\"op\": \"gru_cell\", \"norm\": \"%s\", \"norm_impl\": \"%s\", \"batch\": %lld, \"input\": %lld, \"hidden\": "
        "%lld, "
        "\"threads\": %d, \"fwd_ms\": %.4f, \"fwd_bwd_ms\": %.4f}\n",
        name, norm_impl_name(g_impl).c_str(), (long long)batch, (long long)input, (long long)hidden, threads, fwd,
        fwd_bwd);
    std::fflush(stdout);
  }
  return 0;
}
