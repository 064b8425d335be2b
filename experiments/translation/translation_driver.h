#pragma once
// One driver body for every translation model. A model's main.cpp gives a
// recipe — its flags, how to build it, how it learns — and calls
// translation_main; everything else is shared:
//
// Training: a joint SentencePiece BPE model of --vocab-size pieces is trained
// on the training text (both languages) into <out>/subword.model; pairs
// longer than --max-length subwords are dropped; batches of up to --batch
// sentences and --batch-tokens padded tokens are bucketed by length. Every
// --eval-every steps (and at the last step) the validation set is scored —
// per-token cross-entropy, and BLEU of its beam-search translations
// (sacreBLEU's default, on detokenised text; hypotheses in <out>/hypotheses/)
// — and <out>/checkpoint.safetensors is written (--resume continues from it);
// the checkpoint with the best validation BLEU is kept as
// <out>/best.safetensors. At the end the best checkpoint translates the test
// set, whose BLEU is logged with its signature.
//
// Translating (--translate FILE): the model settings come from
// <out>/config.json, the weights from <out>/best.safetensors (else
// checkpoint.safetensors), the subwords from <out>/subword.model; one
// detokenised translation per input line, to --output or stdout.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/experiments/translation/translation_config.h"
#include "rmsgrad/models/seq2seq.h"
#include "rmsgrad/optim/adam.h"

namespace rg {

// A finished run's config.json, read back for --translate.
class SavedSettings {
 public:
  explicit SavedSettings(const std::string& run_dir);
  // Sets `value` to the saved flag `key` (its name without dashes), if saved.
  template <class T>
  void get(const char* key, T& value) const {
    if (!json_.contains(key)) return;
    try {
      value = json_[key].get<T>();
    } catch (const nlohmann::json::exception&) {
      throw Error(fmt::format("--translate: {}: '{}' is {}, not a value of the right type", path_, key,
                              json_[key].dump()));
    }
  }

 private:
  std::string path_;
  nlohmann::json json_;
};

struct TranslationRecipe {
  std::string title;               // the --help header
  std::string model_name;          // in the log: "RNNSearch"
  std::vector<std::string> norms;  // the --norm choices
  std::string norm_places;         // where the norm acts, for --help
  TranslationConfig defaults;      // the shared settings' defaults for this model
  // The model's own flags, bound to the recipe's own settings.
  std::function<void(CLI::App&)> add_model_flags;
  // Reads the model's own flags back from a run's config.json (--translate).
  std::function<void(const SavedSettings&)> restore_model_flags;
  // The model, over a joint vocabulary of `vocab` subwords.
  std::function<std::unique_ptr<Seq2Seq>(const TranslationConfig& cfg, int64_t vocab, Generator& init_gen,
                                         Generator& noise_gen)>
      build;
  // Adam's settings (lr is set from learning_rate at every step when that is given).
  std::function<AdamOptions(const TranslationConfig& cfg)> adam;
  // The learning rate of step (1-based); empty: cfg.lr throughout.
  std::function<double(const TranslationConfig& cfg, int64_t step)> learning_rate;
  // What the log says about the schedule ("" for a constant rate).
  std::function<std::string(const TranslationConfig& cfg)> describe_schedule;
  // Without data flags (the synthetic task): defaults for flags not given,
  // {"--steps", "400"}, so that the bare command is a quick demonstration.
  // --vocab-size is 400 there for every model.
  std::vector<std::pair<std::string, std::string>> synthetic_defaults;
};

// The whole driver: parses the flags, then trains or (--translate) translates.
int translation_main(int argc, char** argv, const TranslationRecipe& recipe);

}  // namespace rg
