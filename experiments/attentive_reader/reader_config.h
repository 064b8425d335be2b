#pragma once
// The attentive reader driver's settings (every flag of
// experiments/attentive_reader/main.cpp, with the recipe's defaults) and the
// questions they name: a format's files, or the synthetic task.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/experiments/attentive_reader/reading_data.h"
#include "rmsgrad/experiments/common/norm_flags.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/models/attentive_reader.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"

namespace rg::reader {

struct ReaderConfig {
  static constexpr AttentiveReaderRecipe kRecipe{};
  RunOptions run{.out = "runs/attentive_reader"};  // --seed --threads --out --config --resume --log-every
  std::string data, valid_data, test_data;
  std::string format = "synthetic";
  int top_sentences = 4;
  bool anonymize = true;
  bool shuffle_entities = true;
  NormOptions norm{.kind = NormKind::RMSNorm};
  std::string cell = "lstm";
  std::string attention = "mlp";
  int64_t embed = kRecipe.embed, hidden = kRecipe.hidden;
  float dropout = kRecipe.dropout;
  double lr = kRecipe.adam.lr;
  int64_t batch = kRecipe.batch;
  TrainingOptions training{.steps = 2000, .eval_every = 100, .clip = kRecipe.clip.clip};
  int64_t min_count = 1, max_vocab = 50000;
  int64_t synthetic_questions = 6000;
  int64_t limit = 0;
};

// Adds every flag of the driver (--data ... --stop-after) to `app`.
void add_reader_flags(CLI::App& app, ReaderConfig& cfg);

// Throws rg::Error when --format and the data flags do not go together.
void check_reader_flags(const ReaderConfig& cfg);

// The model the settings make for a vocabulary of `vocab` words.
AttentiveReaderOptions model_options(const ReaderConfig& cfg, int64_t vocab);

// The questions of a run: training and validation (a tenth of --data held out
// when there is no --valid-data), the test questions, candidates anonymised
// unless --anonymize false (the synthetic task's always are).
struct ReaderQuestions {
  Split split;
  std::vector<Question> test;
  bool anonymized = true;
  bool shuffle = false;  // rename the entity ids for every training batch
};
ReaderQuestions read_reader_questions(const ReaderConfig& cfg, uint64_t seed);

}  // namespace rg::reader
