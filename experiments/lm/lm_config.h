#pragma once
// The language-model driver's settings: every flag of experiments/lm/main.cpp,
// with the recipe's defaults, and the model they make.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "rmsgrad/experiments/common/norm_flags.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/models/llama.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"

namespace rg::lm {

struct LmConfig {
  static constexpr LanguageModelRecipe kRecipe{};
  RunOptions run{.out = "runs/lm", .files = {"sample.txt"}};  // the sample drawn after training
  std::string data;  // the folder of cbt_valid.txt and cbt_test.txt; empty: synthetic sentences
  std::string valid_book = "Andrew_Lang___The_Grey_Fairy_Book";
  int64_t synthetic_chars = 200000;
  NormOptions norm{.kind = NormKind::RMSNorm};
  int64_t layers = kRecipe.layers, model_size = kRecipe.model_size, heads = kRecipe.heads, ffn = kRecipe.ffn;
  int64_t context = kRecipe.context, batch = kRecipe.batch;
  bool tie = false;
  double lr = kRecipe.adam.lr;
  int64_t warmup = -1;  // -1: a tenth of the steps, at most 100
  int64_t valid_chars = 65536;
  int64_t sample_chars = 400;
  std::string prompt = "the king said";  // in the synthetic text's alphabet too
  float temperature = 0.8f;
  int64_t top_k = 20;
  TrainingOptions training{.steps = 2000, .eval_every = 200, .clip = kRecipe.clip.clip, .best_metric = "-bpc"};
};

// Adds every flag of the driver to `app`.
void add_lm_flags(CLI::App& app, LmConfig& cfg);

// The model the settings make for a vocabulary of `vocab` characters.
LlamaOptions model_options(const LmConfig& cfg, int64_t vocab);

}  // namespace rg::lm
