// summed_inputs RUN_DIR: the paper's Table 5 for one trained RNNSearch run —
// the decoder GRU's hidden-to-hidden summed inputs on the validation set,
// their mean M and standard deviation S at target positions 1, 2, 3, 4 and
// over all positions, before the norm (raw) and after it (normalized). What
// is pooled into M and S is defined in
// experiments/translation/summed_inputs.h.
//
//   build/bin/summed_inputs runs/mt/rmsnorm [--json runs/mt/rmsnorm/summed_inputs.json]
//   build/bin/summed_inputs runs/mt/rmsnorm --valid-src newstest2013.en --valid-tgt newstest2013.de
//
// The model is rebuilt from the run's config.json (as `rnnsearch --translate`
// does) and loaded from best.safetensors, else checkpoint.safetensors; the
// pairs are the run's validation set (its --valid-src/--valid-tgt, or the
// synthetic task's validation pairs drawn from its seed) unless given here.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/experiments/common/file_status.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/experiments/translation/summed_inputs.h"
#include "rmsgrad/experiments/translation/translation_driver.h"
#include "rmsgrad/experiments/translation/translation_models.h"
#include "rmsgrad/layers/save_load.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

struct Settings {
  std::string run_dir, valid_src, valid_tgt, json_path;
  int cell = 1;
  int64_t batch = 40, limit = 0;
  int threads = 0;
};

// The run's validation pairs, or the ones named by the flags, encoded with its subwords.
EncodedPairs validation_pairs(const Settings& s, const SavedSettings& saved, TranslationConfig& cfg,
                              std::string& described) {
  saved.get("train-src", cfg.train_src);
  saved.get("valid-src", cfg.valid_src);
  saved.get("valid-tgt", cfg.valid_tgt);
  saved.get("synthetic-pairs", cfg.synthetic_pairs);
  saved.get("synthetic-max-words", cfg.synthetic_max_words);
  uint64_t seed = cfg.run.seed;
  saved.get("seed", seed);
  ParallelText text;
  if (!s.valid_src.empty()) {
    text = read_parallel_text(s.valid_src, s.valid_tgt);
    described = s.valid_src;
  } else if (cfg.train_src.empty()) {
    text = read_corpus(cfg, seed).valid;  // the synthetic task, as the run drew it
    described = fmt::format("the synthetic task's validation set (seed {})", seed);
  } else {
    text = read_parallel_text(cfg.valid_src, cfg.valid_tgt);
    described = cfg.valid_src;
  }
  if (s.limit > 0 && static_cast<int64_t>(text.size()) > s.limit) {
    text.source.resize(static_cast<size_t>(s.limit));
    text.target.resize(static_cast<size_t>(s.limit));
  }
  EncodedPairs pairs = encode_pairs(text, saved_subwords(cfg), 0);
  check(pairs.size() > 0, "{}: no pair has both sides non-empty", described);
  return pairs;
}

nlohmann::ordered_json moments_json(const MomentSums& m) {
  return {{"mean", m.mean()}, {"sd", m.sd()}, {"values", m.count}};
}

}  // namespace

int main(int argc, char** argv) {
  return report_errors([&]() -> int {
    Settings s;
    CLI::App app{"The paper's Table 5: an RNNSearch run's decoder summed inputs by target position"};
    app.add_option("run", s.run_dir, "the run directory of a trained rnnsearch")->required();
    app.add_option("--cell", s.cell, "the decoder's GRU: 1 reads s_{j-1} (the paper's), 2 reads s'_j")
        ->check(CLI::IsMember({1, 2}))
        ->capture_default_str();
    auto* src = app.add_option("--valid-src", s.valid_src, "source text to use instead of the run's validation set");
    auto* tgt = app.add_option("--valid-tgt", s.valid_tgt, "its target text");
    src->needs(tgt);
    tgt->needs(src);
    app.add_option("--limit", s.limit, "only the first N pairs (0: all)")->check(non_negative);
    app.add_option("--batch", s.batch, "sentences per teacher-forced batch")->check(positive)->capture_default_str();
    app.add_option("--json", s.json_path, "also write the statistics here as JSON");
    app.add_option("--threads", s.threads, "threads (0: OMP_NUM_THREADS)")->check(non_negative);
    if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
    if (s.threads > 0) set_num_threads(s.threads);

    const SavedSettings saved(s.run_dir);
    std::string program = "rnnsearch";
    saved.get("program", program);
    check(program == "rnnsearch", "{} is a run of {}, not of rnnsearch", s.run_dir, program);
    TranslationConfig cfg = translation_config(RNNSearchRecipe{}, s.run_dir);
    restore_translation_settings(saved, cfg);
    RNNSearchSettings model_settings;
    restore_rnnsearch_settings(saved, model_settings);
    std::string described;
    const EncodedPairs pairs = validation_pairs(s, saved, cfg, described);

    fs::path weights = fs::path(s.run_dir) / "best.safetensors";
    if (!path_exists(weights)) weights = fs::path(s.run_dir) / "checkpoint.safetensors";
    check(path_exists(weights), "{} has neither best.safetensors nor checkpoint.safetensors", s.run_dir);
    Generator init_gen(0), noise_gen(1);
    const int64_t vocab = saved_subwords(cfg).vocab_size();
    RNNSearch model(rnnsearch_options(cfg, model_settings, vocab), init_gen, noise_gen);
    load(model, weights.string());

    const SummedInputStatistics stats = decoder_summed_inputs(model, pairs, s.batch, s.cell);
    std::printf("Decoder GRU%d hidden-to-hidden summed inputs, norm %s, %lld sentences of %s, %s\n", s.cell,
                norm_name(cfg.norm.kind).c_str(), static_cast<long long>(stats.sentences), described.c_str(),
                weights.string().c_str());
    std::printf("%-14s %9s %9s %9s %9s %9s\n", "", "1", "2", "3", "4", "all");
    auto print_row = [](const char* name, const std::array<MomentSums, 4>& at, const MomentSums& all, bool sd) {
      std::printf("%-14s", name);
      for (const MomentSums& m : at) std::printf(" %9.3f", sd ? m.sd() : m.mean());
      std::printf(" %9.3f\n", sd ? all.sd() : all.mean());
    };
    print_row("raw M", stats.raw_at, stats.raw_all, false);
    print_row("raw S", stats.raw_at, stats.raw_all, true);
    print_row("normalized M", stats.normalized_at, stats.normalized_all, false);
    print_row("normalized S", stats.normalized_at, stats.normalized_all, true);

    if (!s.json_path.empty()) {
      nlohmann::ordered_json out = {{"run", s.run_dir},           {"weights", weights.string()},
                                    {"norm", norm_name(cfg.norm.kind)}, {"cell", s.cell},
                                    {"pairs", described},         {"sentences", stats.sentences}};
      for (const auto& [name, at, all] : {std::tuple{"raw", &stats.raw_at, &stats.raw_all},
                                          std::tuple{"normalized", &stats.normalized_at, &stats.normalized_all}}) {
        nlohmann::ordered_json by_position;
        for (size_t j = 0; j < at->size(); ++j) by_position[std::to_string(j + 1)] = moments_json((*at)[j]);
        by_position["all"] = moments_json(*all);
        out[name] = by_position;
      }
      write_file_atomically(s.json_path, out.dump(2) + "\n");
    }
    return 0;
  });
}
