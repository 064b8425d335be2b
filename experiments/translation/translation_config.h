#pragma once
// The settings every translation driver shares (build/bin/rnnsearch,
// build/bin/transformer): the data, the subwords, the batches, the optimizer's
// learning rate, decoding and scoring. Each driver fills the recipe's part
// (sizes, dropout, label smoothing, learning rate, batch, clip) from its
// model's recipe (experiments/common/recipes.h) before the flags are read.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/experiments/common/norm_flags.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"
#include "rmsgrad/experiments/translation/translation_data.h"

namespace rg {

struct TranslationConfig {
  // --seed --threads --out --config --resume --log-every; the driver's own files in --out: the
  // subword model and the folder of translations
  RunOptions run{.out = "runs/translation", .files = {"subword.model", "hypotheses"}};
  std::string train_src, train_tgt, valid_src, valid_tgt, test_src, test_tgt;
  std::string translate, output;
  int64_t vocab_size = 0, max_length = 80;  // vocab_size: the recipe's
  int64_t synthetic_pairs = 20000;
  int synthetic_max_words = 25;
  NormOptions norm{.kind = NormKind::RMSNorm};
  float dropout = 0.0f, label_smoothing = 0.0f;  // the recipe's
  AdamOptions adam;                               // the recipe's; --lr sets .lr (the peak under a schedule)
  int64_t batch = 0, batch_tokens = 0;            // the recipe's
  TrainingOptions training{.steps = 10000, .eval_every = 1000, .best_metric = "BLEU"};  // .clip: the recipe's
  int beam = 5, valid_beam = 5;
  float length_norm = 1.0f;
  int64_t valid_limit = 0, decode_batch = 40;
};

// The shared settings a model's recipe (experiments/common/recipes.h) sets:
// its vocabulary, dropout, label smoothing, Adam and clip; `out` is
// the driver's default run directory. The batch is the driver's to set.
template <class Recipe>
TranslationConfig translation_config(const Recipe& recipe, const std::string& out) {
  TranslationConfig cfg;
  cfg.run.out = out;
  cfg.vocab_size = recipe.vocab;
  cfg.dropout = recipe.dropout;
  cfg.label_smoothing = recipe.label_smoothing;
  cfg.adam = recipe.adam;
  cfg.training.clip = recipe.clip.clip;
  return cfg;
}

// Adds the shared flags (--train-src ... --stop-after) to `app`; `norms` are
// the --norm choices the model offers and `norm_places` says where they act.
void add_translation_flags(CLI::App& app, TranslationConfig& cfg, const std::vector<std::string>& norms,
                           const std::string& norm_places);

struct Corpus {
  ParallelText train, valid, test;
};

// The training, validation and test text: the files named by the flags, or the
// synthetic task (500 validation and 500 test pairs) from `seed`.
Corpus read_corpus(const TranslationConfig& cfg, uint64_t seed);

}  // namespace rg
