#pragma once
// The two translation models as their drivers build them (build/bin/rnnsearch,
// build/bin/transformer) and as bench_step times them: each model's own
// settings (its driver's flags) and the options they make together with the
// shared ones of TranslationConfig (the norm, dropout, label smoothing).
#include <cstdint>
#include <string>

#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/experiments/translation/translation_config.h"
#include "rmsgrad/models/rnnsearch.h"
#include "rmsgrad/models/transformer.h"

namespace rg {

class SavedSettings;  // a run's config.json (translation_driver.h)

struct RNNSearchSettings {
  int64_t embed = RNNSearchRecipe{}.embed, hidden = RNNSearchRecipe{}.hidden;
  int64_t attention = 0;     // the attention MLP's size; 0: the context size, 2·hidden
  float init_center = 0.0f;  // every weight matrix starts moved by this (the paper's Figure 4: 0.2)
};

RNNSearchOptions rnnsearch_options(const TranslationConfig& cfg, const RNNSearchSettings& settings, int64_t vocab);
// The settings a run's config.json saved (--embed, --hidden, --attention, --init-center).
void restore_rnnsearch_settings(const SavedSettings& saved, RNNSearchSettings& settings);

struct TransformerSettings {
  int64_t model_size = TransformerRecipe{}.model_size, ffn = TransformerRecipe{}.ffn;
  int64_t heads = TransformerRecipe{}.heads, layers = TransformerRecipe{}.layers;
  std::string norm_position = "post";
  float attention_dropout = 0.0f;
  bool share_embeddings = false;
};

TransformerOptions transformer_options(const TranslationConfig& cfg, const TransformerSettings& settings,
                                       int64_t vocab);

}  // namespace rg
