// How far a training step is from its floors: the matrix products it must do,
// run alone at the speed each library gives those same shapes, and the same
// FLOPs at the core's arithmetic peak.
//
//   bench_floor --model transformer --threads 1
//   bench_floor --model rnnsearch --threads 2 --norm layernorm --set batch=40
//   bench_floor --model transformer --threads 1 --by-shape   # then each product shape alone
//
// One step runs under a GemmRecording (bench/profiling.h), which notes every
// product the forward and backward passes and the optimizer ask of the
// libraries — shapes, transposes, batch, whether it accumulates — and every
// convolution on oneDNN's primitives. Those calls are then replayed back to
// back, with the same threads and the same gemm_batched dispatch, on buffers
// of random numbers: the best library's floor (oneDNN for every product and
// convolution it takes, core/gemm.h). A second step, recorded with every
// product on OpenBLAS (convolutions as im2col GEMMs), is replayed the same
// way: the floor before oneDNN. The third floor
// is no program's: the products' FLOPs at the f32 FMA peak of these threads
// (bench/peak_flops.h, measured first), or under --precision bf16 at the
// peak of the fastest bf16 instruction (AMX tiles, else vdpbf16ps). The
// OpenBLAS floor is f32 in either case. The step and the replays are each
// timed `--steps` times after `--warmup` untimed rounds, medians reported.
//
// Then `--steps` more steps run under an OpProfile (bench/profiling.h),
// which charges every stretch of the step's wall time to one op's forward or
// backward, or to a phase (clip, optimizer), and splits each charge into its
// BLAS products, its allocations and the rest. The rest is sorted into kinds:
// normalization, element-wise, softmax and loss, recurrence (the fused cells'
// gate arithmetic), data movement (slices, concatenations, permutes, gathers,
// embeddings), convolution and pooling (im2col, pooling), optimizer (the
// update and clipping), and other (the tape's bookkeeping, zeroing
// gradients, everything not named).
//
// Prints one JSON line: model, norm, threads, precision, the sizes, gemm_library (the
// step's), step_ms, floor_ms (the best library's), rest_ms (step − floor:
// everything that is not a product), step_over_floor, floor_openblas_ms,
// step_over_openblas_floor, peak_gflops (these threads, the precision's),
// peak_floor_ms, step_over_peak_floor, gemm_gflop (the FLOPs of all the
// step's products, in 1e9), gemm_calls, floor_gflops and
// floor_openblas_gflops (the products' speed when run alone), and from the profiled
// steps: profiled_ms (a profiled step; the profile's own cost is the
// difference from step_ms), gemm_in_step_ms (the products' time inside the
// step, against floor_ms alone), and breakdown_ms by kind (including
// allocation), which with gemm_in_step_ms adds up to profiled_ms; top_ops_ms
// lists the eight names with the most time outside products.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "bench/model_steps/bench_flags.h"
#include "bench/peak_flops.h"
#include "bench/profiling.h"
#include "bench/step_timing.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/onednn_conv.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"

using namespace rg;

namespace {

// Buffers large enough for every recorded call's operands.
struct ReplayBuffers {
  std::vector<float> a, b, c;
  explicit ReplayBuffers(const std::vector<GemmCall>& calls) {
    size_t sa = 1, sb = 1, sc = 1;
    for (const GemmCall& g : calls) {
      sa = std::max(sa, static_cast<size_t>(g.batch * g.m * g.k));
      sb = std::max(sb, static_cast<size_t>(g.batch * g.k * g.n));
      sc = std::max(sc, static_cast<size_t>(g.batch * g.m * g.n));
    }
    Generator gen(7);
    auto fill = [&](std::vector<float>& v, size_t n) {
      v.resize(n);
      for (float& x : v) x = static_cast<float>(gen.uniform() - 0.5);
    };
    fill(a, sa), fill(b, sb), fill(c, sc);
  }
};

// The same for the recorded convolutions: input, weight, output, and a
// gradient for each.
struct ConvBuffers {
  std::vector<float> x, w, y, dx, dw, db;
  explicit ConvBuffers(const std::vector<ConvCall>& calls) {
    size_t sx = 1, sw = 1, sy = 1, so = 1;
    for (const ConvCall& call : calls) {
      const ConvDims& d = call.dims;
      sx = std::max(sx, static_cast<size_t>(d.n * d.c * d.h * d.w));
      sw = std::max(sw, static_cast<size_t>(d.o * d.c * d.kh * d.kw));
      sy = std::max(sy, static_cast<size_t>(d.n * d.o * d.ho * d.wo));
      so = std::max(so, static_cast<size_t>(d.o));
    }
    Generator gen(8);
    for (auto [v, n] : {std::pair{&x, sx}, {&w, sw}, {&y, sy}, {&dx, sx}, {&dw, sw}, {&db, so}}) {
      v->resize(n);
      for (float& value : *v) value = static_cast<float>(gen.uniform() - 0.5);
    }
  }
};

struct Recorded {
  std::vector<GemmCall> products;
  std::vector<ConvCall> convolutions;
};

Recorded record(bench::ModelStep& step) {
  bench::GemmRecording recording;
  step.run();
  return {recording.calls(), recording.conv_calls()};
}

void replay(const Recorded& calls, ReplayBuffers& buffers, ConvBuffers& conv) {
  for (const GemmCall& g : calls.products)
    gemm_batched(g.batch, g.trans_a, g.trans_b, g.m, g.n, g.k, 1.0f, buffers.a.data(), buffers.b.data(),
                 g.accumulate ? 1.0f : 0.0f, buffers.c.data());
  for (const ConvCall& c : calls.convolutions) {
    if (c.forward) onednn_conv_forward(c.dims, conv.x.data(), conv.w.data(), conv.db.data(), conv.y.data());
    if (c.backward_data || c.backward_weights) {
      ConvGradients grads;
      grads.dx = c.backward_data ? conv.dx.data() : nullptr;
      grads.dw = c.backward_weights ? conv.dw.data() : nullptr;
      grads.db = c.backward_weights ? conv.db.data() : nullptr;
      onednn_conv_backward(c.dims, conv.x.data(), conv.w.data(), conv.y.data(), grads);
    }
  }
}

// --by-shape: each distinct product of the step replayed alone, `steps` times
// after one warm-up, one JSON line per shape (its calls in a step, their
// median ms together, GFLOP/s), the slowest first.
void print_products_by_shape(const std::vector<GemmCall>& products, ReplayBuffers& buffers, ConvBuffers& no_conv,
                             int steps) {
  std::map<std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, bool>, int> count;
  for (const GemmCall& g : products) ++count[{g.trans_a, g.trans_b, g.batch, g.m, g.n, g.k, g.accumulate}];
  std::vector<std::pair<double, std::string>> lines;
  for (const auto& [key, calls] : count) {
    const auto [ta, tb, batch, m, n, k, accumulate] = key;
    const GemmCall g{.trans_a = ta, .trans_b = tb, .batch = batch, .m = m, .n = n, .k = k, .accumulate = accumulate};
    const Recorded alone{std::vector<GemmCall>(calls, g), {}};
    const double ms = bench::median_of(bench::time_steps([&] { replay(alone, buffers, no_conv); }, 1, steps));
    lines.emplace_back(ms, fmt::format("{{\"op\": \"{}{}\", \"batch\": {}, \"m\": {}, \"n\": {}, \"k\": {}, \"accumulate\": {}, "
                                       "\"calls\": {}, \"ms\": {:.2f}, \"gflops\": {:.1f}}}",
                                       ta ? 'T' : 'N', tb ? 'T' : 'N', batch, m, n, k, accumulate, calls, ms,
                                       calls * bench::flops(g) / 1e6 / ms));
  }
  std::sort(lines.rbegin(), lines.rend());
  for (const auto& [ms, line] : lines) std::printf("%s\n", line.c_str());
}

// The kind of work a profiled name stands for (see the top of this file).
std::string kind_of(std::string name) {
  if (const size_t b = name.rfind(" backward"); b != std::string::npos) name.resize(b);
  auto is = [&](std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
      if (name == n) return true;
    return false;
  };
  if (is({"layer_norm", "rms_norm", "prms_norm", "l2_norm", "batch_norm", "weight_norm"})) return "normalization";
  if (is({"softmax", "log_softmax", "attention_softmax", "bahdanau_weights", "cross_entropy", "order_violation"}))
    return "softmax_loss";
  if (is({"gru_update", "lstm_gates", "lstm_cell_state", "lstm_hidden"})) return "recurrence";
  if (is({"slice", "concat", "reshape", "permute", "index_select", "gather", "gather_rows", "embedding"}))
    return "data_movement";
  if (is({"conv2d", "max_pool2d", "global_avg_pool"})) return "convolution_pooling";
  if (is({"optimizer", "clip"})) return "optimizer";
  if (is({"add", "sub", "mul", "div", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "square", "tanh", "sigmoid",
          "relu", "leaky_relu", "clamp", "maximum", "max", "mean", "sum", "add_scalar", "mul_scalar", "scalar_sub",
          "gelu", "gelu_tanh", "silu", "swiglu", "softplus", "pow", "rotary",
          "dropout", "where", "masked_fill", "add_tanh", "weighted_sum", "affine", "matmul"}))
    return "elementwise";  // affine and matmul: what is not their product (a bias, a copy)
  return "other";
}

// Mean milliseconds per profiled step, as a JSON object of `ms` sorted by key.
std::string json_ms(const std::map<std::string, double>& ms) {
  std::string out = "{";
  for (const auto& [key, value] : ms) out += fmt::format("{}\"{}\": {:.1f}", out.size() > 1 ? ", " : "", key, value);
  return out + "}";
}

}  // namespace

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  bench::ModelFlags flags;
  flags.model = "transformer";
  std::string norm = "layernorm";
  int steps = 5;
  bool by_shape = false;
  size_t top_ops = 8;
  CLI::App app{"A training step against the time of its matrix products alone", "bench_floor"};
  bench::add_model_flags(app, flags);
  app.add_option("--norm", norm, "the normalization");
  app.add_option("--steps", steps, "timed steps (and timed replays)")->check(CLI::PositiveNumber);
  app.add_option("--top-ops", top_ops, "how many ops top_ops_ms lists, costliest first (8)");
  app.add_flag("--by-shape", by_shape, "then each distinct product replayed alone, a JSON line per shape, slowest first");
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  try {
    set_num_threads(flags.threads);
    const Precision precision = parse_precision(flags.precision);
    set_product_precision(precision);
    const bench::PeakFlops peak = bench::measure_peak_flops(flags.threads, 0.1);
    bench::Sizes sizes = flags.sizes();
    std::unique_ptr<bench::ModelStep> step =
        bench::make_model_step(flags.model, {.kind = parse_norm_kind(norm)}, sizes);
    const std::vector<double> step_times = bench::time_steps([&] { step->run(); }, flags.warmup, steps);
    check(std::isfinite(step->loss()), "bench_floor: the loss is {}", step->loss());

    // The step's products and convolutions as the library runs them, and
    // as they run on OpenBLAS alone (convolutions then being im2col GEMMs).
    const Recorded calls = record(*step);
    const GemmLibrary library = gemm_library();
    set_product_precision(Precision::F32);  // OpenBLAS has f32 products only
    set_gemm_library(GemmLibrary::OpenBLAS);
    const Recorded openblas_calls = record(*step);
    set_gemm_library(library);
    set_product_precision(precision);
    ReplayBuffers buffers(calls.products), openblas_buffers(openblas_calls.products);
    ConvBuffers conv_buffers(calls.convolutions), no_conv({});
    const std::vector<double> floor_times =
        bench::time_steps([&] { replay(calls, buffers, conv_buffers); }, flags.warmup, steps);
    set_product_precision(Precision::F32);
    set_gemm_library(GemmLibrary::OpenBLAS);
    const std::vector<double> openblas_times =
        bench::time_steps([&] { replay(openblas_calls, openblas_buffers, no_conv); }, flags.warmup, steps);
    set_gemm_library(library);
    set_product_precision(precision);

    std::map<std::string, bench::OpTimes> profiled;
    {
      bench::OpProfile profile;
      for (int i = 0; i < steps; ++i) {
        step->run();
        profile.mark("other");  // the step's end: the loss read, the tape cleared
      }
      profiled = profile.totals();
    }
    std::map<std::string, double> by_kind, outside_products;
    double gemm_in_step = 0.0, allocation = 0.0, profiled_total = 0.0;
    for (const auto& [name, t] : profiled) {
      const double own = t.seconds - t.gemm_seconds - t.allocation_seconds;
      by_kind[kind_of(name)] += 1e3 * own / steps;
      outside_products[name] += 1e3 * (t.seconds - t.gemm_seconds) / steps;
      gemm_in_step += 1e3 * t.gemm_seconds / steps;
      allocation += 1e3 * t.allocation_seconds / steps;
      profiled_total += 1e3 * t.seconds / steps;
    }
    by_kind["allocation"] = allocation;
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& [name, ms] : outside_products) ranked.emplace_back(ms, name);
    std::sort(ranked.rbegin(), ranked.rend());
    std::map<std::string, double> top;
    for (size_t i = 0; i < ranked.size() && i < top_ops; ++i) top[ranked[i].second] = ranked[i].first;

    double flops = 0.0;
    for (const GemmCall& g : calls.products) flops += bench::flops(g);
    for (const ConvCall& c : calls.convolutions) flops += bench::flops(c);
    const double step_ms = bench::median_of(step_times), floor_ms = bench::median_of(floor_times);
    // bf16's peak is that of the fastest bf16 instruction the CPU has (AMX, else vdpbf16ps).
    const double peak_gflops = precision == Precision::BF16 && std::max(peak.amx_bf16_gflops, peak.bf16_gflops) > 0
                                   ? std::max(peak.amx_bf16_gflops, peak.bf16_gflops)
                                   : peak.f32_gflops;
    const double openblas_ms = bench::median_of(openblas_times), peak_ms = flops / 1e6 / peak_gflops;
    std::printf("{\"model\": \"%s\", \"norm\": \"%s\", \"threads\": %d, \"precision\": \"%s\", %s\"gemm_library\": \"%s\", "
                "\"step_ms\": %.1f, \"floor_ms\": %.1f, \"rest_ms\": %.1f, \"step_over_floor\": %.3f, "
                "\"floor_openblas_ms\": %.1f, \"step_over_openblas_floor\": %.3f, \"peak_gflops\": %.1f, "
                "\"peak_floor_ms\": %.1f, \"step_over_peak_floor\": %.3f, \"gemm_gflop\": %.2f, "
                "\"gemm_calls\": %zu, \"floor_gflops\": %.1f, \"floor_openblas_gflops\": %.1f, "
                "\"profiled_ms\": %.1f, \"gemm_in_step_ms\": %.1f, \"breakdown_ms\": %s, \"top_ops_ms\": %s}\n",
                flags.model.c_str(), norm.c_str(), flags.threads, flags.precision.c_str(), sizes.json().c_str(),
                std::string(gemm_library_name(library)).c_str(), step_ms, floor_ms, step_ms - floor_ms,
                step_ms / floor_ms, openblas_ms, step_ms / openblas_ms, peak_gflops, peak_ms, step_ms / peak_ms,
                flops / 1e9, calls.products.size() + calls.convolutions.size(), flops / 1e6 / floor_ms, flops / 1e6 / openblas_ms, profiled_total,
                gemm_in_step, json_ms(by_kind).c_str(), json_ms(top).c_str());
    if (by_shape) print_products_by_shape(calls.products, buffers, no_conv, steps);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_floor: %s\n", e.what());
    return 1;
  }
}
