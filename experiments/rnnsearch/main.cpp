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
// the paper's are --embed 512 --hidden 1024. --init-center 0.2 is the
// paper's Figure 4 (every weight matrix's initialization centred at 0.2).
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/experiments/translation/translation_driver.h"
#include "rmsgrad/experiments/translation/translation_models.h"

using namespace rg;

namespace {

class RNNSearchDriver : public TranslationModelDriver {
 public:
  void add_flags(CLI::App& app) override {
    app.add_option("--embed", settings_.embed, "word vectors and deep output size")->check(rg::in_range(1, 1 << 16));
    app.add_option("--hidden", settings_.hidden, "GRU units (per encoder direction)")->check(rg::in_range(1, 1 << 16));
    app.add_option("--attention", settings_.attention, "attention MLP size (0: the context size, 2·hidden)")
        ->check(rg::in_range(0, 1 << 16));
    app.add_option("--init-center", settings_.init_center,
                   "added to every weight matrix's initial values, biases and norm gains left alone (the paper's "
                   "Figure 4: 0.2)")
        ->check(rg::in_range(-10.0, 10.0));
  }
  void restore(const SavedSettings& saved) override { restore_rnnsearch_settings(saved, settings_); }
  std::unique_ptr<Seq2Seq> make_model(const TranslationConfig& cfg, int64_t vocab, Generator& init,
                                      Generator& noise) const override {
    return std::make_unique<RNNSearch>(rnnsearch_options(cfg, settings_, vocab), init, noise);
  }

 private:
  RNNSearchSettings settings_;
};

int train(int argc, char** argv) {
  const RNNSearchRecipe recipe;
  TranslationConfig cfg = translation_config(recipe, "runs/rnnsearch");
  cfg.batch = recipe.batch;
  RNNSearchDriver model;
  return translation_main(
      argc, argv,
      {.title = "Machine translation with RNNSearch, as Nematus (Zhang & Sennrich 2019, Tables 2-3)",
       .model_name = "RNNSearch",
       .norms = {"none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "weightnorm"},
       .norm_places = "in every GRU, the attention, the initial state and the deep output",
       .synthetic_defaults = {}},
      cfg, model);
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_polite_threads(argv);  // short OpenMP spins, for a machine shared with other jobs
  return run_main(argc, argv, train);
}
