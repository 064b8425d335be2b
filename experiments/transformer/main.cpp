// Machine translation with the Transformer and a choice of normalization and
// of its position: the paper's Table 4.
//
//   build/bin/transformer --norm rmsnorm --out runs/tf/rmsnorm                # the synthetic task
//   build/bin/transformer --norm rmsnorm --norm-position pre --out runs/tf/rmsnorm-pre
//       --train-src train.de.gz --train-tgt train.en.gz --valid-src val.de.gz --valid-tgt val.en.gz
//       --test-src test_2016_flickr.de.gz --test-tgt test_2016_flickr.en.gz
//   build/bin/transformer --translate input.de --out runs/tf/rmsnorm [--output hyp.en] [--beam 5]
//
// Data, subwords, batches, validation BLEU, the test set and --translate are
// those of build/bin/rnnsearch (experiments/translation/translation_driver.h),
// with the same flags.
//
// Recipe (experiments/common/recipes.h: the paper's Table 4, after Vaswani et
// al. 2017): Adam β = (0.9,
// 0.98), ε 1e-9; the learning rate rises linearly for --warmup steps to its
// peak --lr and then falls as 1/sqrt(step):
//
//   lr(step) = lr_peak · min(step / warmup, sqrt(warmup / step))
//
// which is Vaswani's d^−0.5 · min(step^−0.5, step · warmup^−1.5) with
// lr_peak = (d · warmup)^−0.5 (7.0e-4 for d = 512 and 4,000 warm-up steps);
// label smoothing 0.1; dropout 0.1; Xavier-uniform init; no gradient clip.
// Batches are counted in tokens (--batch-tokens). Sizes default to a
// CPU-sized model (d 256, FFN 1024, 4 heads, 3 + 3 layers); the paper's base
// model is --model-size 512 --ffn 2048 --heads 8 --layers 6. Without data
// flags the synthetic task runs with a small model and 400 steps, in well
// under a minute (apply_synthetic_defaults; any flag given wins).
#include <algorithm>
#include <cmath>

#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/experiments/translation/translation_driver.h"
#include "rmsgrad/models/transformer.h"
#include "rmsgrad/optim/adam.h"

using namespace rg;

namespace {

// The model's own settings (the shared ones are in TranslationConfig).
struct TransformerFlags {
  int64_t model_size = TransformerRecipe{}.model_size, ffn = TransformerRecipe{}.ffn, heads = TransformerRecipe{}.heads,
          layers = TransformerRecipe{}.layers;
  std::string norm_position = "post";
  float attention_dropout = 0.0f;
  bool share_embeddings = false;
  int64_t warmup = TransformerRecipe{}.warmup;
};

TransformerOptions model_options(const TranslationConfig& cfg, const TransformerFlags& flags, int64_t vocab) {
  TransformerOptions o;
  o.source_vocab = o.target_vocab = vocab;
  o.encoder_layers = o.decoder_layers = flags.layers;
  o.layer.model_size = flags.model_size;
  o.layer.ffn_size = flags.ffn;
  o.layer.heads = flags.heads;
  o.layer.norm = cfg.norm.options();
  o.layer.norm_position = parse_norm_position(flags.norm_position);
  o.layer.dropout = cfg.dropout;
  o.layer.attention_dropout = flags.attention_dropout;
  o.label_smoothing = cfg.label_smoothing;
  o.share_embeddings = flags.share_embeddings;
  return o;
}

// --translate: the model of the run in --out translates a file.
int translate(TranslationConfig cfg, TransformerFlags flags) {
  const SavedSettings saved(cfg.run.out);
  restore_translation_settings(saved, cfg);
  saved.get("model-size", flags.model_size);
  saved.get("ffn", flags.ffn);
  saved.get("heads", flags.heads);
  saved.get("layers", flags.layers);
  saved.get("norm-position", flags.norm_position);
  saved.get("share-embeddings", flags.share_embeddings);
  const Subword subword = saved_subwords(cfg);
  Generator init_gen(0), noise_gen(1);
  Transformer model(model_options(cfg, flags, subword.vocab_size()), init_gen, noise_gen);
  translate_file(model, subword, cfg);
  return 0;
}

int train(int argc, char** argv) {
  const TransformerRecipe recipe;
  TranslationConfig cfg = translation_config(recipe, "runs/transformer");
  cfg.batch = 1000;  // sentences; the tokens bound the batch
  cfg.batch_tokens = recipe.batch_tokens;
  cfg.norm.norm = "layernorm";
  cfg.training.steps = 20000;
  TransformerFlags flags;
  CLI::App app{"Machine translation with the Transformer (Zhang & Sennrich 2019, Table 4)"};
  add_translation_flags(app, cfg, {"none", "layernorm", "rmsnorm", "prmsnorm", "l2norm"},
                        "in every encoder and decoder layer (and after each stack with --norm-position pre)");
  app.add_option("--model-size", flags.model_size, "d: word vectors and every layer's width")
      ->check(rg::in_range(1, 1 << 16));
  app.add_option("--ffn", flags.ffn, "the feed-forward network's hidden width")->check(rg::in_range(1, 1 << 18));
  app.add_option("--heads", flags.heads, "attention heads (must divide --model-size)")->check(rg::in_range(1, 1 << 10));
  app.add_option("--layers", flags.layers, "encoder layers, and as many decoder layers")->check(rg::in_range(1, 1 << 10));
  app.add_option("--norm-position", flags.norm_position,
                 "post: norm after each residual sum (the paper); pre: before each sublayer, plus a final norm")
      ->check(CLI::IsMember({"post", "pre"}));
  app.add_option("--attention-dropout", flags.attention_dropout, "dropout on the attention weights")
      ->check(rg::in_range(0.0, 0.99));
  app.add_flag("--share-embeddings", flags.share_embeddings,
               "one word table for source, target and output (the subwords are joint)");
  app.add_option("--warmup", flags.warmup, "steps of linear warm-up to the peak --lr")->check(rg::positive);
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
  // Translating is one process's job: under mpirun rank 0 does it.
  if (!cfg.translate.empty()) return dist::ProcessGroup::world().writer() ? translate(cfg, flags) : 0;
  // The bare command trains a small model on the synthetic task in well under a minute.
  apply_synthetic_defaults(app, cfg, {{"--model-size", "64"}, {"--ffn", "128"}, {"--layers", "2"},
                                      {"--batch-tokens", "1500"}, {"--warmup", "100"}, {"--lr", "0.002"},
                                      {"--steps", "400"}, {"--eval-every", "200"}, {"--synthetic-pairs", "2000"},
                                      {"--synthetic-max-words", "8"}, {"--valid-limit", "100"}, {"--valid-beam", "1"}});
  check(flags.model_size % flags.heads == 0, "--heads {} must divide --model-size {}", flags.heads, flags.model_size);

  Run run(cfg.run, run_settings(app));
  TranslationData data = read_translation_data(cfg, run);
  Generator init_gen(cfg.run.seed), noise_gen(cfg.run.seed + 1);
  Transformer model(model_options(cfg, flags, data.subword.vocab_size()), init_gen, noise_gen);
  run.note(fmt::format("Transformer, {} parameters, norm {}", model.parameter_count(), cfg.norm.norm));
  BatchCursor cursor(translation_batches(data.train, {.max_sentences = cfg.batch, .max_tokens = cfg.batch_tokens}),
                     cfg.run.seed + 3);
  AdamOptions adam_options = recipe.adam;
  adam_options.lr = cfg.lr;
  Adam adam(model.named_parameters(), adam_options);
  // Linear warm-up to the peak, then 1/sqrt(step): lr_peak · min(step / warmup, sqrt(warmup / step)).
  auto learning_rate = [&](int64_t step) {
    const double s = static_cast<double>(step), w = static_cast<double>(flags.warmup);
    return cfg.lr * std::min(s / w, std::sqrt(w / s));
  };
  run.note(fmt::format("{} steps of up to {} sentences{} ({} per epoch); Adam lr {} (peak; {} warm-up steps, then "
                       "1/sqrt(step)), β {} {}; clip {}",
                       cfg.training.steps, cfg.batch,
                       cfg.batch_tokens > 0 ? fmt::format(" and {} tokens", cfg.batch_tokens) : "",
                       cursor.batches_per_epoch(), cfg.lr, flags.warmup, adam.options().beta1, adam.options().beta2,
                       cfg.training.clip));

  Trainer trainer(run, model, adam, cfg.training);
  trainer.keep("init", init_gen);
  trainer.keep("noise", noise_gen);
  trainer.keep(cursor);
  trainer.start();
  save_new_subwords(data, run);
  if (trainer.due_for_validation()) trainer.validate(validate_translation(model, data, cfg, run, 0));
  while (trainer.running()) {
    adam.set_lr(learning_rate(trainer.next_step()));
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
