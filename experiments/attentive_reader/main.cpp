// Cloze-style reading comprehension with the bidirectional attentive reader
// and a choice of normalization inside its LSTMs: the paper's Table 6 and
// Figure 5.
//
//   build/bin/attentive_reader --norm rmsnorm --out runs/reader/rmsnorm     # synthetic task
//   build/bin/attentive_reader --format babi --norm rmsnorm
//       --data ../shared/data/babi/en/qa1_single-supporting-fact_train.txt
//   build/bin/attentive_reader --format deepmind --data cnn/questions/training
//       --valid-data cnn/questions/validation --top-sentences 4
//
// Formats (reading_data.h): synthetic (no --data), babi, cbt (CBT question
// files), cbt-book (cloze questions built from CBT book text), deepmind (a
// directory of .question files). Without --valid-data a tenth of the
// training stories / files is held out for validation. Candidates are
// anonymised (@entityK) unless --anonymize false, and the entity ids are
// shuffled for every training batch unless --shuffle-entities false (the
// synthetic task draws its ids at random per question and is not shuffled).
//
// bAbI task 1 as the README runs it (scripts/attentive_reader_paper.sh):
//   --format babi --data …/qa1_single-supporting-fact_train.txt --embed 64 --hidden 64
//   --batch 32 --lr 0.001 --dropout 0.3 --steps 3000
//
// The recipe (../shared/PAPER.md): LSTM hidden 240, word vectors 240, Adam lr
// 8e-5, batch 64, gradients clipped to global norm 10, dropout 0.5. Every
// --eval-every steps (and at the last step) the validation error is logged
// and <out>/checkpoint.safetensors written; --resume continues from it. With
// --test-data the final model is scored on it at the end.
#include <CLI/CLI.hpp>
#include <algorithm>

#include "autograd/ops.h"
#include "core/error.h"
#include "experiments/attentive_reader/reader_batches.h"
#include "experiments/attentive_reader/reading_data.h"
#include "experiments/common/norm_flags.h"
#include "experiments/common/run.h"
#include "experiments/common/training_loop.h"
#include "models/attentive_reader.h"
#include "optim/adam.h"

using namespace rg;
using namespace rg::reader;

namespace {

struct ReaderConfig {
  std::string data, valid_data, test_data;
  std::string format = "synthetic";
  int top_sentences = 4;
  bool anonymize = true;
  bool shuffle_entities = true;
  NormFlags norm;
  std::string cell = "lstm";
  std::string attention = "mlp";
  int64_t embed = 240, hidden = 240;
  float dropout = 0.5f;
  double lr = 8e-5;
  int64_t batch = 64;
  TrainingOptions loop{.steps = 2000, .eval_every = 100, .clip = 10.0};
  int64_t min_count = 1, max_vocab = 50000;
  int64_t synthetic_questions = 6000;
  int64_t limit = 0;
};

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

ReaderInputs inputs_of(const ReaderBatch& b) {
  return {b.document, b.document_mask, b.query, b.query_mask, b.candidates, b.candidate_padding};
}

// Loss and error (% of questions whose best-scored candidate is not the
// answer) over a whole set, in eval mode, entity ids as they are.
Scores evaluate(AttentiveReader& model, const std::vector<EncodedQuestion>& set, const EntityShuffler& identity,
                int64_t batch) {
  NoGradGuard no_grad;
  model.eval();
  double loss = 0.0;
  int64_t wrong = 0;
  for (int64_t first = 0; first < static_cast<int64_t>(set.size()); first += batch) {
    Batch indices;
    for (int64_t i = first; i < std::min<int64_t>(first + batch, set.size()); ++i) indices.push_back(i);
    ReaderBatch b = make_batch(set, indices, identity);
    Var scores = model.forward(inputs_of(b)).scores;
    loss += cross_entropy(scores, b.answers).item() * static_cast<double>(b.size());
    const int64_t k = scores.dim(1);
    for (int64_t r = 0; r < b.size(); ++r) {
      const float* row = scores.value().data() + r * k;
      wrong += (std::max_element(row, row + k) - row) != b.answers.values[static_cast<size_t>(r)];
    }
  }
  model.train();
  const double n = static_cast<double>(std::max<size_t>(set.size(), 1));
  return Scores{.loss = loss / n, .fields = {{"error_pct", 100.0 * static_cast<double>(wrong) / n}}};
}

int train(int argc, char** argv) {
  RunOptions run_options;
  run_options.out = "runs/attentive_reader";
  ReaderConfig cfg;
  CLI::App app{"Cloze-style reading comprehension with the attentive reader (Hermann et al. 2015; "
               "Zhang & Sennrich 2019, Table 6)"};
  add_run_options(app, run_options);
  app.add_option("--data", cfg.data, "training questions: a file, or a directory for deepmind; empty: synthetic");
  app.add_option("--format", cfg.format, "how to read --data")
      ->check(CLI::IsMember({"synthetic", "babi", "cbt", "cbt-book", "deepmind"}));
  app.add_option("--valid-data", cfg.valid_data, "validation questions (empty: a tenth of --data held out)");
  app.add_option("--test-data", cfg.test_data, "test questions, scored with the final model");
  app.add_option("--top-sentences", cfg.top_sentences, "deepmind: keep this many passage sentences (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--anonymize", cfg.anonymize, "replace candidates by @entityK, shuffled per training batch");
  app.add_option("--shuffle-entities", cfg.shuffle_entities,
                 "rename the entity ids afresh for every training batch (never needed by the synthetic task, "
                 "whose ids are drawn at random for every question)");
  add_norm_flags(app, cfg.norm, {"none", "layernorm", "rmsnorm", "prmsnorm", "batchnorm"},
                 "inside the recurrent layers");
  app.add_option("--cell", cfg.cell, "recurrent cell")->check(CLI::IsMember({"lstm", "gru"}));
  app.add_option("--attention", cfg.attention, "mlp (Hermann et al.'s tanh layer) or bilinear (Chen et al. 2016)")
      ->check(CLI::IsMember({"mlp", "bilinear"}));
  app.add_option("--embed", cfg.embed, "word vector size")->check(CLI::PositiveNumber);
  app.add_option("--hidden", cfg.hidden, "recurrent units per direction")->check(CLI::PositiveNumber);
  app.add_option("--dropout", cfg.dropout, "dropout on word vectors and the joint reading")
      ->check(CLI::Range(0.0f, 0.99f));
  app.add_option("--lr", cfg.lr, "Adam learning rate")->check(CLI::PositiveNumber);
  app.add_option("--batch", cfg.batch, "questions per step")->check(CLI::PositiveNumber);
  app.add_option("--clip", cfg.loop.clip, "global gradient norm clip")->check(CLI::PositiveNumber);
  app.add_option("--steps", cfg.loop.steps, "training steps")->check(CLI::PositiveNumber);
  app.add_option("--eval-every", cfg.loop.eval_every, "steps between validations")->check(CLI::PositiveNumber);
  app.add_option("--min-count", cfg.min_count, "rarer words become <unk>")->check(CLI::PositiveNumber);
  app.add_option("--max-vocab", cfg.max_vocab, "vocabulary size limit (0: none)")->check(CLI::NonNegativeNumber);
  app.add_option("--synthetic-questions", cfg.synthetic_questions, "questions of the synthetic task")
      ->check(CLI::Range(20, 1 << 24));
  app.add_option("--limit", cfg.limit, "deepmind / cbt-book: read at most this many questions (0: all)")
      ->check(CLI::NonNegativeNumber);
  add_stop_after_flag(app, cfg.loop);
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
  check(cfg.data.empty() == (cfg.format == "synthetic"),
        "--format synthetic takes no --data, and every other format needs one (got --format {} --data '{}')",
        cfg.format, cfg.data);
  check(cfg.format != "synthetic" || (cfg.valid_data.empty() && cfg.test_data.empty()),
        "--valid-data and --test-data need a --data format");

  Run run(app, run_options);
  const bool anonymized = cfg.anonymize || cfg.format == "synthetic";
  const bool shuffle = anonymized && cfg.shuffle_entities && cfg.format != "synthetic";
  Split split;
  if (cfg.format == "synthetic") {
    split = hold_out_tenth(synthetic_questions(cfg.synthetic_questions, run_options.seed + 100));
  } else if (cfg.valid_data.empty()) {
    split = hold_out_tenth(prepared(read_questions(cfg, cfg.data, run_options.seed + 100), anonymized));
  } else {
    split.train = prepared(read_questions(cfg, cfg.data, run_options.seed + 100), anonymized);
    split.valid = prepared(read_questions(cfg, cfg.valid_data, run_options.seed + 101), anonymized);
  }
  std::vector<Question> test =
      cfg.test_data.empty() ? std::vector<Question>{}
                            : prepared(read_questions(cfg, cfg.test_data, run_options.seed + 102), anonymized);
  check(!split.train.empty() && !split.valid.empty(), "attentive_reader: {} training and {} validation questions; "
        "need at least one of each", split.train.size(), split.valid.size());
  run.note(fmt::format("{} questions: {} training, {} validation, {} test{}", cfg.format, split.train.size(),
                       split.valid.size(), test.size(), anonymized ? ", candidates anonymised" : ""));

  int64_t entities = std::max({entity_count(split.train), entity_count(split.valid), entity_count(test)});
  std::vector<Question> held_out = split.valid;
  held_out.insert(held_out.end(), test.begin(), test.end());
  Vocab vocab = build_vocab(split.train, held_out, entities, cfg.min_count, cfg.max_vocab);
  std::vector<EncodedQuestion> train_set = encode(split.train, vocab), valid_set = encode(split.valid, vocab),
                               test_set = encode(test, vocab);
  run.note(fmt::format("vocabulary {} words, {} entity ids", vocab.size(), entities));

  AttentiveReaderOptions model_options;
  model_options.vocab_size = vocab.size();
  model_options.embed_dim = cfg.embed;
  model_options.hidden = cfg.hidden;
  model_options.norm = cfg.norm.options();
  model_options.cell = parse_reader_cell(cfg.cell);
  model_options.attention_kind = parse_reader_attention(cfg.attention);
  model_options.dropout = cfg.dropout;
  Generator init_gen(run_options.seed), noise_gen(run_options.seed + 1), entity_gen(run_options.seed + 2);
  AttentiveReader model(model_options, init_gen, noise_gen);
  run.note(fmt::format("attentive reader, {} {} parameters, norm {}", model.parameter_count(), cfg.cell, cfg.norm.norm));

  BatchCursor cursor(reader_batches(train_set, cfg.batch), run_options.seed + 3);
  EntityShuffler shuffled(vocab, entities), identity(vocab, entities);
  Adam adam(model.named_parameters(), AdamOptions{.lr = cfg.lr});
  run.note(fmt::format("{} steps of up to {} questions ({} per epoch); Adam lr {}; clip {}", cfg.loop.steps, cfg.batch,
                       cursor.batches_per_epoch(), cfg.lr, cfg.loop.clip));

  TrainingLoop loop(run, model, adam, cfg.loop);
  loop.progress.cursor = &cursor;
  loop.progress.generators = {{"init", &init_gen}, {"noise", &noise_gen}, {"entities", &entity_gen}};
  loop.batch_loss = [&](int64_t) {
    if (shuffle) shuffled.shuffle(entity_gen);
    ReaderBatch b = make_batch(train_set, cursor.next(), shuffled);
    return model.loss(inputs_of(b), b.answers);
  };
  loop.validate = [&](int64_t) {
    Scores valid = evaluate(model, valid_set, identity, cfg.batch);
    return rg::Evaluation{.loss = valid.loss, .fields = valid.fields};
  };
  loop.test = [&](int64_t step) {
    if (test_set.empty()) return;
    Scores result = evaluate(model, test_set, identity, cfg.batch);
    run.log_eval("test", step, result.loss, result.fields);
  };
  loop.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_main([&] { return train(argc, argv); });
}
