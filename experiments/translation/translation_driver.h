#pragma once
// The translation drivers (build/bin/rnnsearch, build/bin/transformer): one
// body, translation_main, with the flags, data, training loop, validation,
// test and --translate they share; each driver's main.cpp gives it only its
// model's part (TranslationModelDriver): its own flags, the model they make
// and its learning-rate schedule.
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
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"
#include "rmsgrad/experiments/translation/subword.h"
#include "rmsgrad/experiments/translation/translation_config.h"
#include "rmsgrad/models/seq2seq.h"
#include "rmsgrad/optim/schedule.h"

namespace rg {

// Without data flags (the synthetic task): defaults for the flags not given
// ({"--steps", "400"}), so that the bare command is a quick demonstration;
// --vocab-size is 400 there for every model. Call after parse_flags.
void apply_synthetic_defaults(CLI::App& app, const TranslationConfig& cfg,
                              std::vector<std::pair<std::string, std::string>> defaults);

// The text of a training run, its subwords and the encoded sets.
struct TranslationData {
  Corpus corpus;
  Subword subword;
  bool subword_is_new = false;  // trained now, not read from the resumed run's subword.model
  EncodedPairs train, valid;
  std::vector<std::vector<int32_t>> valid_sources;  // the first --valid-limit sources, for BLEU
  std::vector<std::string> valid_refs;
};

// Reads the corpus (or makes the synthetic task), trains the subwords (or
// reads the resumed run's) and encodes every set, noting each in the log.
TranslationData read_translation_data(const TranslationConfig& cfg, Run& run);
// Writes new subwords into the run directory (rank 0) once training has
// begun (after Trainer::start): a start that fails earlier leaves the
// directory as it was.
void save_new_subwords(const TranslationData& data, Run& run);

// The loss of a training batch: under mpirun, this process's share of it,
// weighted as its part of the global batch's mean (dist/batch_share.h).
Var translation_loss(Seq2Seq& model, const TranslationBatch& batch);

// The validation: per-token loss, and BLEU of the validation sources'
// translations (kept in hypotheses/valid.step<N>.txt); BLEU is the score
// that picks best.safetensors.
Evaluation validate_translation(Seq2Seq& model, const TranslationData& data, const TranslationConfig& cfg, Run& run,
                                int64_t step);
// The test after training, with the best checkpoint: a test line with its
// loss, BLEU and step, and BLEU's signature in the log. Nothing without a test set.
void test_translation(Seq2Seq& model, const TranslationData& data, const TranslationConfig& cfg, Run& run,
                      Trainer& trainer);

// A finished run's config.json, read back for --translate.
class SavedSettings {
 public:
  explicit SavedSettings(const std::string& run_dir);
  // Sets `value` to the saved flag `key` (its name without dashes), if saved
  // with a value (a flag not given is saved as null).
  template <class T>
  void get(const char* key, T& value) const {
    if (!json_.contains(key) || json_[key].is_null()) return;
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

// For --translate: the shared settings that shape the model (the norm), from
// the run's config.json.
void restore_translation_settings(const SavedSettings& saved, TranslationConfig& cfg);
// The run's subwords (<out>/subword.model).
Subword saved_subwords(const TranslationConfig& cfg);
// Translates --translate with the run's best.safetensors (else its
// checkpoint.safetensors) loaded into `model`: one line per input line, to
// --output or stdout.
void translate_file(Seq2Seq& model, const Subword& subword, const TranslationConfig& cfg);

// A driver's model: what build/bin/rnnsearch and build/bin/transformer each
// add to translation_main.
class TranslationModelDriver {
 public:
  virtual ~TranslationModelDriver() = default;
  // The model's own flags, added after the shared ones (add_translation_flags).
  virtual void add_flags(CLI::App& app) = 0;
  // For --translate: the model's flags as the run's config.json saved them.
  virtual void restore(const SavedSettings& saved) = 0;
  // Checks across the model's flags, once parsed (synthetic defaults applied).
  virtual void check() const {}
  // The model for a joint vocabulary of `vocab` subwords; its weights drawn
  // from `init`, its dropout from `noise`.
  virtual std::unique_ptr<Seq2Seq> make_model(const TranslationConfig& cfg, int64_t vocab, Generator& init,
                                              Generator& noise) const = 0;
  // The learning rate of each update, or nullptr for --lr throughout.
  virtual std::unique_ptr<LearningRateSchedule> schedule(const TranslationConfig&) const { return nullptr; }
  // The learning rate as the run's log describes it.
  virtual std::string lr_description(const TranslationConfig& cfg) const { return fmt::format("{}", cfg.adam.lr); }
};

// What names a driver: its --help title, its model in the log, the --norm
// choices the model offers and where they act, and the defaults the bare
// command (the synthetic task) takes for flags not given.
struct TranslationDriverText {
  std::string title, model_name;
  std::vector<std::string> norms;
  std::string norm_places;
  std::vector<std::pair<std::string, std::string>> synthetic_defaults;
};

// A translation driver's train(): parses the flags into `cfg` (the model's
// recipe filled in) and `model`, then translates (--translate, rank 0 only
// under mpirun) or trains, validates and tests.
int translation_main(int argc, char** argv, const TranslationDriverText& text, TranslationConfig cfg,
                     TranslationModelDriver& model);

}  // namespace rg
