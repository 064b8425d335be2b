// Machine translation with RNNSearch and a choice of normalization: the
// paper's Tables 2–3 and Figure 1.
//
//   build/bin/rnnsearch --norm rmsnorm --out runs/mt/rmsnorm          # the synthetic task
//   build/bin/rnnsearch --norm rmsnorm --out runs/mt/rmsnorm
//       --train-src train.de.gz --train-tgt train.en.gz --valid-src val.de.gz --valid-tgt val.en.gz
//       --test-src test_2016_flickr.de.gz --test-tgt test_2016_flickr.en.gz
//   build/bin/rnnsearch --translate input.de --out runs/mt/rmsnorm [--output hyp.en] [--beam 5]
//
// Data, subwords, validation BLEU, the test set and --translate are shared
// with the Transformer (experiments/translation/translation_driver.h).
//
// Recipe (experiments/common/recipes.h, after ../shared/PAPER.md): Adam lr
// 1e-4, batch 80, clip 1.0, dropout 0.2, label smoothing 0.1, N(0, 0.01)
// init, beam 5. Sizes default to a CPU-sized model (embed and hidden 256);
// the paper's are --embed 512 --hidden 1024.
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/experiments/translation/translation_driver.h"
#include "rmsgrad/models/rnnsearch.h"
#include "rmsgrad/optim/adam.h"

using namespace rg;

namespace {

// The model's own settings (the shared ones are in TranslationConfig).
struct RNNSearchFlags {
  int64_t embed = RNNSearchRecipe{}.embed, hidden = RNNSearchRecipe{}.hidden, attention = 0;
};

RNNSearchOptions model_options(const TranslationConfig& cfg, const RNNSearchFlags& flags, int64_t vocab) {
  RNNSearchOptions o;
  o.source_vocab = o.target_vocab = vocab;
  o.embed = flags.embed;
  o.hidden = flags.hidden;
  o.attention = flags.attention;
  o.norm = cfg.norm.options();
  o.dropout = cfg.dropout;
  o.label_smoothing = cfg.label_smoothing;
  return o;
}

// --translate: the model of the run in --out translates a file.
int translate(TranslationConfig cfg, RNNSearchFlags flags) {
  const SavedSettings saved(cfg.run.out);
  restore_translation_settings(saved, cfg);
  saved.get("embed", flags.embed);
  saved.get("hidden", flags.hidden);
  saved.get("attention", flags.attention);
  const Subword subword = saved_subwords(cfg);
  Generator init_gen(0), noise_gen(1);
  RNNSearch model(model_options(cfg, flags, subword.vocab_size()), init_gen, noise_gen);
  translate_file(model, subword, cfg);
  return 0;
}

int train(int argc, char** argv) {
  const RNNSearchRecipe recipe;
  TranslationConfig cfg = translation_config(recipe, "runs/rnnsearch");
  cfg.batch = recipe.batch;
  RNNSearchFlags flags;
  CLI::App app{"Machine translation with RNNSearch, as Nematus (Zhang & Sennrich 2019, Tables 2-3)"};
  add_translation_flags(app, cfg, {"none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "weightnorm"},
                        "in every GRU, the attention, the initial state and the deep output");
  app.add_option("--embed", flags.embed, "word vectors and deep output size")->check(rg::in_range(1, 1 << 16));
  app.add_option("--hidden", flags.hidden, "GRU units (per encoder direction)")->check(rg::in_range(1, 1 << 16));
  app.add_option("--attention", flags.attention, "attention MLP size (0: the context size, 2·hidden)")
      ->check(rg::in_range(0, 1 << 16));
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
  // Translating is one process's job: under mpirun rank 0 does it.
  if (!cfg.translate.empty()) return dist::ProcessGroup::world().writer() ? translate(cfg, flags) : 0;
  apply_synthetic_defaults(app, cfg, {});

  Run run(cfg.run, run_settings(app));
  TranslationData data = read_translation_data(cfg, run);
  Generator init_gen(cfg.run.seed), noise_gen(cfg.run.seed + 1);
  RNNSearch model(model_options(cfg, flags, data.subword.vocab_size()), init_gen, noise_gen);
  run.note(fmt::format("RNNSearch, {} parameters, norm {}", model.parameter_count(), cfg.norm.norm));
  BatchCursor cursor(translation_batches(data.train, {.max_sentences = cfg.batch, .max_tokens = cfg.batch_tokens}),
                     cfg.run.seed + 3);
  AdamOptions adam_options = recipe.adam;
  adam_options.lr = cfg.lr;
  Adam adam(model.named_parameters(), adam_options);
  run.note(fmt::format("{} steps of up to {} sentences{} ({} per epoch); Adam lr {}, β {} {}; clip {}",
                       cfg.training.steps, cfg.batch,
                       cfg.batch_tokens > 0 ? fmt::format(" and {} tokens", cfg.batch_tokens) : "",
                       cursor.batches_per_epoch(), cfg.lr, adam.options().beta1, adam.options().beta2,
                       cfg.training.clip));

  Trainer trainer(run, model, adam, cfg.training);
  trainer.keep("init", init_gen);
  trainer.keep("noise", noise_gen);
  trainer.keep(cursor);
  trainer.start();
  save_new_subwords(data, run);
  if (trainer.due_for_validation()) trainer.validate(validate_translation(model, data, cfg, run, 0));
  while (trainer.running()) {
    trainer.step(translation_loss(model, make_translation_batch(data.train, cursor.next())));
    if (trainer.due_for_log()) trainer.log_train();
    if (trainer.due_for_validation())
      trainer.validate(validate_translation(model, data, cfg, run, trainer.steps_taken()));
  }
  if (trainer.due_for_test()) test_translation(model, data, cfg, run, trainer);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_polite_threads(argv);  // short OpenMP spins, for a machine shared with other jobs
  return run_main(argc, argv, train);
}
