// Times the training steps of one model with several normalizations, fused
// or composed from ops, against each other in ONE process (bench/step_timing.h:
// interleaved rounds, the same batch for every variant, warm-up excluded), so
// that the VM's drift from minute to minute hits every variant alike.
//
//   bench_norm_impl --model rnnsearch --impl fused --threads 1 --pairs 40
//   bench_norm_impl --model convpool --impl fused,composed --set width=0.25
//
// Prints one JSON line per variant: {"model", "impl", "norm", "threads",
// <the model's sizes>, "pairs", "ms_per_step", "ratio_vs_layernorm",
// "ci95_low", "ci95_high", "faster_than_layernorm"}. The ratio is the median
// over the rounds of this variant's step ÷ the LayerNorm step of the same
// implementation in the same round, with its distribution-free 95% interval.
// With both implementations, composed rows also carry "composed_vs_fused"
// (÷ the fused step of the same norm) and its interval, "cf_ci95_low" and
// "cf_ci95_high": what fusing buys. pRMSNorm rows carry "ratio_vs_rmsnorm"
// (÷ the RMSNorm step of the same implementation), "vr_ci95_low", "vr_ci95_high".
#include <cmath>
#include <cstdio>
#include <sstream>

#include "bench/model_steps/bench_flags.h"
#include "bench/step_timing.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"

using namespace rg;

namespace {

std::vector<std::string> words(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string w; std::getline(in, w, separator);)
    if (!w.empty()) out.push_back(w);
  return out;
}

// A variant and the model it times. "none" has no norm to implement either
// way: its composed variant shares the fused one's model and times.
struct Variant {
  NormOptions choice;
  std::unique_ptr<bench::ModelStep> step;  // null when timed as another variant
  size_t timed_as = 0;                     // index into the timed steps
};

// A number for JSON: NaN (too few pairs for an interval) becomes null.
std::string number(double x) { return std::isnan(x) ? "null" : fmt::format("{:.4f}", x); }

// Index of the variant with this kind and implementation, or -1.
int find(const std::vector<Variant>& variants, NormKind kind, NormImpl impl) {
  for (size_t i = 0; i < variants.size(); ++i)
    if (variants[i].choice.kind == kind && variants[i].choice.impl == impl) return static_cast<int>(i);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  bench::ModelFlags flags;
  std::string impls = "fused", norms = "none layernorm rmsnorm prmsnorm";
  int pairs = 40;
  CLI::App app{"Training steps of one model with several norms, fused or composed, timed in pairs", "bench_norm_impl"};
  bench::add_model_flags(app, flags);
  app.add_option("--impl", impls, "fused, composed, or fused,composed (both, for what fusing buys)");
  app.add_option("--norms", norms, "the norms, space-separated; layernorm is always added (the reference)");
  app.add_option("--pairs", pairs, "timed rounds (each one step of every variant)")->check(CLI::PositiveNumber);
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  try {
    set_num_threads(flags.threads);
    std::vector<std::string> norm_names = words(norms, ' ');
    if (std::find(norm_names.begin(), norm_names.end(), "layernorm") == norm_names.end())
      norm_names.insert(norm_names.begin(), "layernorm");
    std::vector<Variant> variants;
    std::vector<bench::ModelStep*> timed;
    std::string sizes_json;
    for (const std::string& impl : words(impls, ','))
      for (const std::string& norm : norm_names) {
        Variant v{{.kind = parse_norm_kind(norm), .impl = parse_norm_impl(impl)}, nullptr, 0};
        const int same = find(variants, NormKind::None, NormImpl::Fused);
        if (v.choice.kind == NormKind::None && same >= 0) {
          v.timed_as = variants[static_cast<size_t>(same)].timed_as;
        } else {
          bench::Sizes sizes = flags.sizes();
          v.step = bench::make_model_step(flags.model, v.choice, sizes);
          sizes_json = sizes.json();
          v.timed_as = timed.size();
          timed.push_back(v.step.get());
        }
        variants.push_back(std::move(v));
      }
    std::vector<bench::Step> steps;
    for (bench::ModelStep* step : timed) steps.push_back([step] { step->run(); });
    const bench::RoundTimes t = bench::time_rounds(steps, flags.warmup, pairs);
    auto times_of = [&](int variant) -> const std::vector<double>& {
      return t.times[variants[static_cast<size_t>(variant)].timed_as];
    };

    for (bench::ModelStep* step : timed)
      check(std::isfinite(step->loss()), "bench_norm_impl: a {} step gave the loss {}", flags.model, step->loss());
    for (size_t i = 0; i < variants.size(); ++i) {
      const Variant& v = variants[i];
      const int ln = find(variants, NormKind::LayerNorm, v.choice.impl);
      const bench::RatioSummary s = bench::summarize(times_of(static_cast<int>(i)), times_of(ln));
      std::string fused_fields;
      const int fused = find(variants, v.choice.kind, NormImpl::Fused);
      if (v.choice.impl == NormImpl::Composed && fused >= 0) {
        const bench::RatioSummary f = bench::summarize(times_of(static_cast<int>(i)), times_of(fused));
        fused_fields = fmt::format(", \"composed_vs_fused\": {}, \"cf_ci95_low\": {}, \"cf_ci95_high\": {}",
                                   number(f.ratio), number(f.ratio_lo), number(f.ratio_hi));
      }
      const int rms = find(variants, NormKind::RMSNorm, v.choice.impl);
      if (v.choice.kind == NormKind::PRMSNorm && rms >= 0) {
        const bench::RatioSummary r = bench::summarize(times_of(static_cast<int>(i)), times_of(rms));
        fused_fields += fmt::format(", \"ratio_vs_rmsnorm\": {}, \"vr_ci95_low\": {}, \"vr_ci95_high\": {}",
                                    number(r.ratio), number(r.ratio_lo), number(r.ratio_hi));
      }
      std::printf("{\"model\": \"%s\", \"impl\": \"%s\", \"norm\": \"%s\", \"threads\": %d, %s\"pairs\": %d, "
                  "\"ms_per_step\": %.3f, \"ratio_vs_layernorm\": %s, \"ci95_low\": %s, \"ci95_high\": %s, "
                  "\"faster_than_layernorm\": %d%s}\n",
                  flags.model.c_str(), norm_impl_name(v.choice.impl).c_str(), norm_name(v.choice.kind).c_str(),
                  flags.threads, sizes_json.c_str(), pairs, s.a_ms, number(s.ratio).c_str(), number(s.ratio_lo).c_str(),
                  number(s.ratio_hi).c_str(), s.a_faster, fused_fields.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_norm_impl: %s\n", e.what());
    return 1;
  }
}
