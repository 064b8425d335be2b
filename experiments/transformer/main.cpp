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
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/experiments/translation/translation_driver.h"
#include "rmsgrad/experiments/translation/translation_models.h"
#include "rmsgrad/optim/schedule.h"

using namespace rg;

namespace {

class TransformerDriver : public TranslationModelDriver {
 public:
  void add_flags(CLI::App& app) override {
    app.add_option("--model-size", settings_.model_size, "d: word vectors and every layer's width")
        ->check(rg::in_range(1, 1 << 16));
    app.add_option("--ffn", settings_.ffn, "the feed-forward network's hidden width")->check(rg::in_range(1, 1 << 18));
    app.add_option("--heads", settings_.heads, "attention heads (must divide --model-size)")
        ->check(rg::in_range(1, 1 << 10));
    app.add_option("--layers", settings_.layers, "encoder layers, and as many decoder layers")
        ->check(rg::in_range(1, 1 << 10));
    app.add_option("--norm-position", settings_.norm_position,
                   "post: norm after each residual sum (the paper); pre: before each sublayer, plus a final norm")
        ->check(CLI::IsMember({"post", "pre"}));
    app.add_option("--attention-dropout", settings_.attention_dropout, "dropout on the attention weights")
        ->check(rg::in_range(0.0, 0.99));
    app.add_flag("--share-embeddings", settings_.share_embeddings,
                 "one word table for source, target and output (the subwords are joint)");
    app.add_option("--warmup", warmup_, "steps of linear warm-up to the peak --lr")->check(rg::positive);
  }
  void restore(const SavedSettings& saved) override {
    saved.get("model-size", settings_.model_size);
    saved.get("ffn", settings_.ffn);
    saved.get("heads", settings_.heads);
    saved.get("layers", settings_.layers);
    saved.get("norm-position", settings_.norm_position);
    saved.get("share-embeddings", settings_.share_embeddings);
  }
  void check() const override {
    rg::check(settings_.model_size % settings_.heads == 0, "--heads {} must divide --model-size {}", settings_.heads,
              settings_.model_size);
  }
  std::unique_ptr<Seq2Seq> make_model(const TranslationConfig& cfg, int64_t vocab, Generator& init,
                                      Generator& noise) const override {
    return std::make_unique<Transformer>(transformer_options(cfg, settings_, vocab), init, noise);
  }
  // Linear warm-up to the peak, then 1/sqrt(step): lr_peak · min(step / warmup, sqrt(warmup / step)).
  std::unique_ptr<LearningRateSchedule> schedule(const TranslationConfig& cfg) const override {
    return std::make_unique<InverseSqrtSchedule>(cfg.adam.lr, warmup_);
  }
  std::string lr_description(const TranslationConfig& cfg) const override {
    return fmt::format("{} (peak; {} warm-up steps, then 1/sqrt(step))", cfg.adam.lr, warmup_);
  }

 private:
  TransformerSettings settings_;
  int64_t warmup_ = TransformerRecipe{}.warmup;
};

int train(int argc, char** argv) {
  const TransformerRecipe recipe;
  TranslationConfig cfg = translation_config(recipe, "runs/transformer");
  cfg.batch = 1000;  // sentences; the tokens bound the batch
  cfg.batch_tokens = recipe.batch_tokens;
  cfg.norm.kind = NormKind::LayerNorm;
  cfg.training.steps = 20000;
  TransformerDriver model;
  // The bare command trains a small model on the synthetic task in well under a minute.
  return translation_main(
      argc, argv,
      {.title = "Machine translation with the Transformer (Zhang & Sennrich 2019, Table 4)",
       .model_name = "Transformer",
       .norms = {"none", "layernorm", "rmsnorm", "prmsnorm", "l2norm"},
       .norm_places = "in every encoder and decoder layer (and after each stack with --norm-position pre)",
       .synthetic_defaults = {{"--model-size", "64"}, {"--ffn", "128"}, {"--layers", "2"}, {"--batch-tokens", "1500"},
                              {"--warmup", "100"}, {"--lr", "0.002"}, {"--steps", "400"}, {"--eval-every", "200"},
                              {"--synthetic-pairs", "2000"}, {"--synthetic-max-words", "8"},
                              {"--valid-limit", "100"}, {"--valid-beam", "1"}}},
      cfg, model);
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_polite_threads(argv);  // short OpenMP spins, for a machine shared with other jobs
  return run_main(argc, argv, train);
}
