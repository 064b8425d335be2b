#include "rmsgrad/experiments/attentive_reader/reader_config.h"

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/flags.h"

namespace rg::reader {

namespace {

std::vector<Question> read_questions(const ReaderConfig& cfg, const std::string& path, uint64_t seed) {
  if (cfg.format == "babi") return read_babi(path);
  if (cfg.format == "cbt") return read_cbt_questions(path);
  if (cfg.format == "deepmind") return read_deepmind_dir(path, cfg.top_sentences, cfg.limit);
  ClozeOptions options;
  options.seed = seed;
  options.limit = cfg.limit;
  return build_cbt_cloze(path, options);
}

std::vector<Question> prepared(std::vector<Question> questions, bool anonymized) {
  if (anonymized)
    for (Question& q : questions) q = anonymize(q);
  return questions;
}

}  // namespace

void add_reader_flags(CLI::App& app, ReaderConfig& cfg) {
  add_run_options(app, cfg.run);
  app.add_option("--data", cfg.data, "training questions: a file, or a directory for deepmind; empty: synthetic");
  app.add_option("--format", cfg.format, "how to read --data")
      ->check(CLI::IsMember({"synthetic", "babi", "cbt", "cbt-book", "deepmind"}));
  app.add_option("--valid-data", cfg.valid_data, "validation questions (empty: a tenth of --data held out)");
  app.add_option("--test-data", cfg.test_data, "test questions, scored with the final model");
  app.add_option("--top-sentences", cfg.top_sentences, "deepmind: keep this many passage sentences (0: all)")
      ->check(rg::non_negative);
  app.add_option("--anonymize", cfg.anonymize, "replace candidates by @entityK, shuffled per training batch");
  app.add_option("--shuffle-entities", cfg.shuffle_entities,
                 "rename the entity ids afresh for every training batch (never needed by the synthetic task, "
                 "whose ids are drawn at random for every question)");
  add_norm_flags(app, cfg.norm, {"none", "layernorm", "rmsnorm", "prmsnorm", "batchnorm"},
                 "inside the recurrent layers");
  app.add_option("--cell", cfg.cell, "recurrent cell")->check(CLI::IsMember({"lstm", "gru"}));
  app.add_option("--attention", cfg.attention, "mlp (Hermann et al.'s tanh layer) or bilinear (Chen et al. 2016)")
      ->check(CLI::IsMember({"mlp", "bilinear"}));
  app.add_option("--embed", cfg.embed, "word vector size")->check(rg::in_range(1, 1 << 16));
  app.add_option("--hidden", cfg.hidden, "recurrent units per direction")->check(rg::in_range(1, 1 << 16));
  app.add_option("--dropout", cfg.dropout, "dropout on word vectors and the joint reading")
      ->check(rg::in_range(0.0, 0.99));
  app.add_option("--lr", cfg.lr, "Adam learning rate")->check(rg::positive);
  app.add_option("--batch", cfg.batch, "questions per step")->check(rg::in_range(1, 1 << 20));
  app.add_option("--clip", cfg.training.clip, "global gradient norm clip")->check(rg::positive);
  app.add_option("--steps", cfg.training.steps, "training steps")->check(rg::positive);
  app.add_option("--eval-every", cfg.training.eval_every, "steps between validations")->check(rg::positive);
  app.add_option("--min-count", cfg.min_count, "rarer words become <unk>")->check(rg::positive);
  app.add_option("--max-vocab", cfg.max_vocab, "vocabulary size limit (0: none)")->check(rg::non_negative);
  app.add_option("--synthetic-questions", cfg.synthetic_questions, "questions of the synthetic task")
      ->check(rg::in_range(20, 1 << 24));
  app.add_option("--limit", cfg.limit, "deepmind / cbt-book: read at most this many questions (0: all)")
      ->check(rg::non_negative);
  add_trainer_flags(app, cfg.training);
}

void check_reader_flags(const ReaderConfig& cfg) {
  check(cfg.data.empty() == (cfg.format == "synthetic"),
        "--format synthetic takes no --data, and every other format needs one (got --format {} --data '{}')",
        cfg.format, cfg.data);
  check(cfg.format != "synthetic" || (cfg.valid_data.empty() && cfg.test_data.empty()),
        "--valid-data and --test-data need a --data format");
  check(cfg.norm.kind != NormKind::BatchNorm || cfg.cell == "lstm",
        "--norm batchnorm works with --cell lstm only (the recurrent BatchNorm of Cooijmans et al. is an LSTM's)");
}

AttentiveReaderOptions model_options(const ReaderConfig& cfg, int64_t vocab) {
  AttentiveReaderOptions options;
  options.vocab_size = vocab;
  options.embed_dim = cfg.embed;
  options.hidden = cfg.hidden;
  options.norm = cfg.norm;
  options.cell = parse_reader_cell(cfg.cell);
  options.attention_kind = parse_reader_attention(cfg.attention);
  options.dropout = cfg.dropout;
  return options;
}

ReaderQuestions read_reader_questions(const ReaderConfig& cfg, uint64_t seed) {
  const bool anonymized = cfg.anonymize || cfg.format == "synthetic";
  const bool shuffle = anonymized && cfg.shuffle_entities && cfg.format != "synthetic";
  Split split;
  if (cfg.format == "synthetic") {
    split = hold_out_tenth(synthetic_questions(cfg.synthetic_questions, seed + 100));
  } else if (cfg.valid_data.empty()) {
    split = hold_out_tenth(prepared(read_questions(cfg, cfg.data, seed + 100), anonymized));
  } else {
    split.train = prepared(read_questions(cfg, cfg.data, seed + 100), anonymized);
    split.valid = prepared(read_questions(cfg, cfg.valid_data, seed + 101), anonymized);
  }
  std::vector<Question> test =
      cfg.test_data.empty() ? std::vector<Question>{}
                            : prepared(read_questions(cfg, cfg.test_data, seed + 102), anonymized);
  check(!split.train.empty() && !split.valid.empty(), "attentive_reader: {} training and {} validation questions; "
        "need at least one of each", split.train.size(), split.valid.size());
  return {split, test, anonymized, shuffle};
}

}  // namespace rg::reader
