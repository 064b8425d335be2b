#include "rmsgrad/experiments/rnnsearch/translation_eval.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/experiments/common/training_checkpoint.h"
#include "rmsgrad/experiments/common/text_file.h"
#include "rmsgrad/experiments/rnnsearch/beam_search.h"

namespace rg {

namespace fs = std::filesystem;

double token_loss(RNNSearch& model, const EncodedPairs& pairs, int64_t batch) {
  NoGradGuard no_grad;
  model.eval();
  double total = 0.0, tokens = 0.0;
  for (int64_t first = 0; first < static_cast<int64_t>(pairs.size()); first += batch) {
    Batch indices;
    for (int64_t i = first; i < std::min<int64_t>(first + batch, pairs.size()); ++i) indices.push_back(i);
    TranslationBatch b = make_translation_batch(pairs, indices);
    Var logits = model.logits(b.source.ids, b.source.mask, b.target.ids, b.target.mask);
    double n = 0.0;
    for (int64_t len : b.target.lengths) n += static_cast<double>(len);
    total += RNNSearch::token_cross_entropy(logits, b.target.ids, b.target.mask).item() * n;
    tokens += n;
  }
  model.train();
  return tokens > 0 ? total / tokens : 0.0;
}

std::vector<std::string> detokenized(const Subword& subword, const std::vector<std::vector<int32_t>>& ids) {
  std::vector<std::string> text;
  text.reserve(ids.size());
  for (const auto& sentence : ids) text.push_back(subword.decode(std::vector<int>(sentence.begin(), sentence.end())));
  return text;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  check(out.good(), "cannot write {}", path);
  for (const std::string& line : lines) out << line << '\n';
  check(out.good(), "writing {} failed", path);
}

int translate_file(const TranslationConfig& cfg, const RunOptions& run_options) {
  const fs::path dir = run_options.out;
  std::ifstream config_file(dir / "config.json");
  check(config_file.good(), "--translate: {} has no config.json (is --out the training run's directory?)",
        dir.string());
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(config_file);
  } catch (const std::exception& e) {
    throw Error(fmt::format("--translate: {} is not valid JSON: {}", (dir / "config.json").string(), e.what()));
  }
  TranslationConfig model_cfg = cfg;
  auto take = [&](const char* key, auto& value) {
    if (!saved.contains(key)) return;
    try {
      value = saved[key].get<std::remove_reference_t<decltype(value)>>();
    } catch (const nlohmann::json::exception&) {
      throw Error(fmt::format("--translate: {}: '{}' is {}, not a value of the right type",
                              (dir / "config.json").string(), key, saved[key].dump()));
    }
  };
  take("norm", model_cfg.norm.norm);
  take("norm-impl", model_cfg.norm.impl);
  take("preact-shift", model_cfg.norm.preact_shift);
  take("p", model_cfg.norm.p);
  take("eps", model_cfg.norm.eps);
  take("embed", model_cfg.embed);
  take("hidden", model_cfg.hidden);
  take("attention", model_cfg.attention);

  Subword subword((dir / "subword.model").string());
  fs::path weights = dir / "best.safetensors";
  if (!fs::exists(weights)) weights = dir / "checkpoint.safetensors";
  check(fs::exists(weights), "--translate: {} has neither best.safetensors nor checkpoint.safetensors",
        dir.string());
  Generator init_gen(0), noise_gen(1);
  RNNSearch model(model_options(model_cfg, subword.vocab_size()), init_gen, noise_gen);
  load_trained_model(weights.string(), model);

  if (run_options.threads > 0) set_num_threads(run_options.threads);
  BeamOptions beam{.beam = cfg.beam, .length_norm = cfg.length_norm};
  std::vector<std::string> lines = read_lines(cfg.translate);
  std::vector<std::string> out =
      detokenized(subword, translate_all(model, encode_sentences(lines, subword), beam, cfg.decode_batch));
  if (cfg.output.empty()) {
    for (const std::string& line : out) std::cout << line << '\n';
  } else {
    write_lines(cfg.output, out);
    std::cerr << fmt::format("translated {} lines of {} into {} with {}\n", out.size(), cfg.translate, cfg.output,
                             weights.string());
  }
  return 0;
}

}  // namespace rg
