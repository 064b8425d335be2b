// Machine translation with RNNSearch and a choice of normalization: the
// paper's Tables 2–3 and Figure 1.
//
//   build/bin/rnnsearch --norm rmsnorm --out runs/mt/rmsnorm          # the synthetic task
//   build/bin/rnnsearch --norm rmsnorm --out runs/mt/rmsnorm
//       --train-src train.de.gz --train-tgt train.en.gz --valid-src val.de.gz --valid-tgt val.en.gz
//       --test-src test_2016_flickr.de.gz --test-tgt test_2016_flickr.en.gz
//   build/bin/rnnsearch --translate input.de --out runs/mt/rmsnorm [--output hyp.en] [--beam 5]
//
// Training, validation, the test set and --translate are shared with the
// Transformer (experiments/translation/translation_driver.h).
//
// Recipe (../shared/PAPER.md): Adam lr 1e-4, batch 80, clip 1.0, label
// smoothing 0.1, N(0, 0.01) init, beam 5. Sizes default to a CPU-sized model
// (embed and hidden 256); the paper's are --embed 512 --hidden 1024.
#include "rmsgrad/experiments/translation/translation_driver.h"
#include "rmsgrad/models/rnnsearch.h"

using namespace rg;

namespace {

// The model's own settings (the shared ones are in TranslationConfig).
struct RNNSearchFlags {
  int64_t embed = 256, hidden = 256, attention = 0;
};

}  // namespace

int main(int argc, char** argv) {
  RNNSearchFlags flags;
  TranslationRecipe recipe;
  recipe.title = "Machine translation with RNNSearch, as Nematus (Zhang & Sennrich 2019, Tables 2-3)";
  recipe.model_name = "RNNSearch";
  recipe.norms = {"none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "weightnorm"};
  recipe.norm_places = "in every GRU, the attention, the initial state and the deep output";
  recipe.defaults.run.out = "runs/rnnsearch";
  recipe.add_model_flags = [&](CLI::App& app) {
    app.add_option("--embed", flags.embed, "word vectors and deep output size")->check(CLI::PositiveNumber);
    app.add_option("--hidden", flags.hidden, "GRU units (per encoder direction)")->check(CLI::PositiveNumber);
    app.add_option("--attention", flags.attention, "attention MLP size (0: the context size, 2·hidden)")
        ->check(CLI::NonNegativeNumber);
  };
  recipe.restore_model_flags = [&](const SavedSettings& saved) {
    saved.get("embed", flags.embed);
    saved.get("hidden", flags.hidden);
    saved.get("attention", flags.attention);
  };
  recipe.build = [&](const TranslationConfig& cfg, int64_t vocab, Generator& init_gen,
                     Generator& noise_gen) -> std::unique_ptr<Seq2Seq> {
    RNNSearchOptions o;
    o.source_vocab = o.target_vocab = vocab;
    o.embed = flags.embed;
    o.hidden = flags.hidden;
    o.attention = flags.attention;
    o.norm = cfg.norm.options();
    o.dropout = cfg.dropout;
    o.label_smoothing = cfg.label_smoothing;
    return std::make_unique<RNNSearch>(o, init_gen, noise_gen);
  };
  return translation_main(argc, argv, recipe);
}
