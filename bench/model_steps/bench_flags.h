#pragma once
// The flags every model benchmark shares (bench_step, bench_norm_impl,
// bench_memory, bench_floor): which model, its sizes, threads, the products'
// precision and warm-up.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "bench/model_steps/model_step.h"

namespace rg::bench {

struct ModelFlags {
  std::string model = "rnnsearch";
  std::vector<std::string> settings;  // --set key=value, repeatable
  int threads = 1;
  int warmup = 2;
  std::string precision = "f32";  // of the products and convolutions (core/gemm.h)

  Sizes sizes() const {
    Sizes s;
    for (const std::string& assignment : settings) s.set(assignment);
    return s;
  }
};

inline void add_model_flags(CLI::App& app, ModelFlags& flags) {
  app.add_option("--model", flags.model, std::string("the model: ") + std::string(kModelNames))
      ->check(CLI::IsMember({"rnnsearch", "reader", "order_embedding", "convpool", "transformer", "lm"}));
  app.add_option("--set", flags.settings,
                 "override one of the model's sizes, key=value (repeatable; e.g. --set batch=32 --set width=0.25)");
  app.add_option("--threads", flags.threads, "threads")->check(CLI::PositiveNumber);
  app.add_option("--warmup", flags.warmup, "untimed steps (rounds) first")->check(CLI::NonNegativeNumber);
  app.add_option("--precision", flags.precision, "the products' and convolutions' inputs: f32, or bf16 with f32 sums")
      ->check(CLI::IsMember({"f32", "bf16"}));
}

}  // namespace rg::bench
