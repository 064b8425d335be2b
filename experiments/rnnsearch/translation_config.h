#pragma once
// The RNNSearch driver's settings: every flag of experiments/rnnsearch/main.cpp
// (the recipe's defaults), the model they describe, and the corpus they name
// (parallel text files, or the synthetic task when --train-src is empty).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "rmsgrad/experiments/common/norm_flags.h"
#include "rmsgrad/experiments/common/run.h"
#include "rmsgrad/experiments/common/training_loop.h"
#include "rmsgrad/experiments/rnnsearch/translation_data.h"
#include "rmsgrad/models/rnnsearch.h"

namespace rg {

struct TranslationConfig {
  RunOptions run{.out = "runs/rnnsearch"};  // --seed --threads --out --config --resume --log-every
  std::string train_src, train_tgt, valid_src, valid_tgt, test_src, test_tgt;
  std::string translate, output;
  int64_t vocab_size = 8000, max_length = 80;
  int64_t synthetic_pairs = 20000;
  int synthetic_max_words = 25;
  NormFlags norm;
  int64_t embed = 256, hidden = 256, attention = 0;
  float dropout = 0.2f, label_smoothing = 0.1f;
  double lr = 1e-4;
  int64_t batch = 80, max_tokens = 0;
  TrainingOptions loop{.steps = 10000, .eval_every = 1000, .clip = 1.0, .best_metric = "BLEU"};
  int beam = 5, valid_beam = 5;
  float length_norm = 1.0f;
  int64_t valid_limit = 0, decode_batch = 40;
};

// Adds every flag of the driver (--train-src ... --stop-after) to `app`.
void add_translation_flags(CLI::App& app, TranslationConfig& cfg);

// The model the settings describe, over a joint vocabulary of `vocab` subwords.
RNNSearchOptions model_options(const TranslationConfig& cfg, int64_t vocab);

struct Corpus {
  ParallelText train, valid, test;
};

// The training, validation and test text: the files named by the flags, or the
// synthetic task (500 validation and 500 test pairs) from `seed`.
Corpus read_corpus(const TranslationConfig& cfg, uint64_t seed);

}  // namespace rg
