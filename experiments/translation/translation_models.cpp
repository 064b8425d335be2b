#include "rmsgrad/experiments/translation/translation_models.h"

#include "rmsgrad/experiments/translation/translation_driver.h"

namespace rg {

RNNSearchOptions rnnsearch_options(const TranslationConfig& cfg, const RNNSearchSettings& settings, int64_t vocab) {
  RNNSearchOptions o;
  o.source_vocab = o.target_vocab = vocab;
  o.embed = settings.embed;
  o.hidden = settings.hidden;
  o.attention = settings.attention;
  o.norm = cfg.norm;
  o.dropout = cfg.dropout;
  o.label_smoothing = cfg.label_smoothing;
  o.init_center = settings.init_center;
  return o;
}

void restore_rnnsearch_settings(const SavedSettings& saved, RNNSearchSettings& settings) {
  saved.get("embed", settings.embed);
  saved.get("hidden", settings.hidden);
  saved.get("attention", settings.attention);
  saved.get("init-center", settings.init_center);
}

TransformerOptions transformer_options(const TranslationConfig& cfg, const TransformerSettings& settings,
                                       int64_t vocab) {
  TransformerOptions o;
  o.source_vocab = o.target_vocab = vocab;
  o.encoder_layers = o.decoder_layers = settings.layers;
  o.layer.model_size = settings.model_size;
  o.layer.ffn_size = settings.ffn;
  o.layer.heads = settings.heads;
  o.layer.norm = cfg.norm;
  o.layer.norm_position = parse_norm_position(settings.norm_position);
  o.layer.dropout = cfg.dropout;
  o.layer.attention_dropout = settings.attention_dropout;
  o.label_smoothing = cfg.label_smoothing;
  o.share_embeddings = settings.share_embeddings;
  return o;
}

}  // namespace rg
