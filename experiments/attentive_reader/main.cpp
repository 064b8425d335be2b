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
// bAbI task 1 as the reproduction report (experiments/README.md) runs it
// (scripts/attentive_reader_paper.sh):
//   --format babi --data …/qa1_single-supporting-fact_train.txt --embed 64 --hidden 64
//   --batch 32 --lr 0.001 --dropout 0.3 --steps 3000
//
// The recipe (../shared/PAPER.md): LSTM hidden 240, word vectors 240, Adam lr
// 8e-5, batch 64, gradients clipped to global norm 10, dropout 0.5. Every
// --eval-every steps (and at the last step) the validation error is logged
// and <out>/checkpoint.safetensors written; --resume continues from it. With
// --test-data the final model is scored on it at the end.
#include <algorithm>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/dist/batch_share.h"
#include "rmsgrad/experiments/attentive_reader/reader_batches.h"
#include "rmsgrad/experiments/attentive_reader/reader_config.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/models/attentive_reader.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"

using namespace rg;
using namespace rg::reader;

namespace {

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
  ReaderConfig cfg;
  CLI::App app{"Cloze-style reading comprehension, the attentive reader (Zhang & Sennrich 2019, Table 6)"};
  add_reader_flags(app, cfg);
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
  check_reader_flags(cfg);

  cfg.run.inputs = run_inputs(app, {"--data", "--valid-data", "--test-data"});
  Run run(cfg.run, run_settings(app));
  const ReaderQuestions questions = read_reader_questions(cfg, cfg.run.seed);
  const Split& split = questions.split;
  const std::vector<Question>& test = questions.test;
  run.note(fmt::format("{} questions: {} training, {} validation, {} test{}", cfg.format, split.train.size(),
                       split.valid.size(), test.size(), questions.anonymized ? ", candidates anonymised" : ""));

  int64_t entities = std::max({entity_count(split.train), entity_count(split.valid), entity_count(test)});
  std::vector<Question> held_out = split.valid;
  held_out.insert(held_out.end(), test.begin(), test.end());
  Vocab vocab = build_vocab(split.train, held_out, entities, cfg.min_count, cfg.max_vocab);
  std::vector<EncodedQuestion> train_set = encode(split.train, vocab), valid_set = encode(split.valid, vocab),
                               test_set = encode(test, vocab);
  auto fingerprint = [](const char* name, const std::vector<EncodedQuestion>& set) {
    std::vector<std::vector<int32_t>> parts;
    for (const EncodedQuestion& q : set) parts.insert(parts.end(), {q.document, q.query, q.candidates, {q.answer}});
    return DataFingerprint{name, static_cast<int64_t>(set.size()), content_hash(parts)};
  };
  run.check_same_data({fingerprint("training questions", train_set), fingerprint("validation questions", valid_set),
                       fingerprint("test questions", test_set)});
  check(!valid_set.empty(), "{}: no validation question (a tenth of the training stories is held out unless "
        "--valid-data names a file); there is nothing to validate on",
        cfg.valid_data.empty() ? (cfg.data.empty() ? "the synthetic task" : cfg.data) : cfg.valid_data);
  run.note(fmt::format("vocabulary {} words, {} entity ids", vocab.size(), entities));

  Generator init_gen(cfg.run.seed), noise_gen(cfg.run.seed + 1), entity_gen(cfg.run.seed + 2);
  AttentiveReader model(reader::model_options(cfg, vocab.size()), init_gen, noise_gen);
  run.note(fmt::format("attentive reader, {} {} parameters, norm {}", model.parameter_count(), cfg.cell, norm_name(cfg.norm.kind)));

  BatchCursor cursor(reader_batches(train_set, cfg.batch), cfg.run.seed + 3);
  EntityShuffler shuffled(vocab, entities), identity(vocab, entities);
  AdamOptions adam_options = cfg.kRecipe.adam;
  adam_options.lr = cfg.lr;
  Adam adam(model.named_parameters(), adam_options);
  run.note(fmt::format("{} steps of up to {} questions ({} per epoch); Adam lr {}; clip {}", cfg.training.steps, cfg.batch,
                       cursor.batches_per_epoch(), cfg.lr, cfg.training.clip));

  Trainer trainer(run, model, adam, cfg.training);
  trainer.keep("init", init_gen);
  trainer.keep("noise", noise_gen);
  trainer.keep("entities", entity_gen);
  trainer.keep(cursor);
  auto validation = [&] {
    const Scores valid = evaluate(model, valid_set, identity, cfg.batch);
    return Evaluation{.loss = valid.loss, .fields = valid.fields};
  };
  trainer.start();
  if (trainer.due_for_validation()) trainer.validate(validation());
  while (trainer.running()) {
    if (questions.shuffle) shuffled.shuffle(entity_gen);
    ReaderBatch b = make_batch(train_set, cursor.next(), shuffled);
    // Under mpirun each process takes its share of the questions (dist/batch_share.h).
    const dist::BatchShare share = dist::batch_share(dist::ProcessGroup::world(), b.size());
    if (share.whole()) {
      trainer.step(model.loss(inputs_of(b), b.answers));
    } else {
      ReaderBatch mine = batch_rows(b, share.first, share.rows);
      ScopedBatchShard shard = share.shard();  // dropout drawn per question
      trainer.step(share.part_of_mean(model.loss(inputs_of(mine), mine.answers)));
    }
    if (trainer.due_for_log()) trainer.log_train();
    if (trainer.due_for_validation()) trainer.validate(validation());
  }
  if (trainer.due_for_test() && !test_set.empty()) trainer.log_test(evaluate(model, test_set, identity, cfg.batch));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_polite_threads(argv);  // short OpenMP spins, for a machine shared with other jobs
  return run_main(argc, argv, train);
}
