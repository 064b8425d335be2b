#include "bench/model_steps/transformer_step.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/npy.h"
#include "rmsgrad/optim/clip.h"

namespace rg::bench {

TransformerStep::TransformerStep(const NormChoice& norm, Sizes& sizes) {
  // The recipe's batch is counted in tokens: sentences of up to tgt_len of them.
  const TransformerRecipe recipe;
  const int64_t src_len = sizes.integer("src_len", 22), tgt_len = sizes.integer("tgt_len", 22);
  const int64_t batch = sizes.integer("batch", recipe.batch_tokens / std::max(src_len, tgt_len));
  options_.source_vocab = options_.target_vocab = sizes.integer("vocab", recipe.vocab);
  check(options_.source_vocab > 4, "transformer: vocab must be above 4");
  options_.layer.model_size = sizes.integer("d", recipe.model_size);
  options_.layer.ffn_size = sizes.integer("ffn", recipe.ffn);
  options_.layer.heads = sizes.integer("heads", recipe.heads);
  options_.encoder_layers = options_.decoder_layers = sizes.integer("layers", recipe.layers);
  options_.layer.norm_position = parse_norm_position(sizes.text("position", "post"));
  options_.layer.norm.kind = norm.kind;
  options_.layer.norm.impl = norm.impl;
  options_.layer.norm.p = static_cast<float>(sizes.real("p", 0.0625));
  options_.layer.dropout = sizes.real("dropout", recipe.dropout);
  options_.label_smoothing = sizes.real("label_smoothing", recipe.label_smoothing);
  const AdamOptions adam = read_adam(sizes, recipe.adam);
  const ClipOptions clip = read_clip(sizes, recipe.clip);
  {
    ObserverScope scope("parameters");
    model_ = std::make_unique<Transformer>(options_, gen_, noise_gen_);
    model_->train();
  }
  reshape(batch, src_len, tgt_len);
  adam_ = std::make_unique<Adam>(model_->named_parameters(), adam);
  use_training_step(*adam_, clip);
}

void TransformerStep::reshape(int64_t batch, int64_t src_len, int64_t tgt_len) {
  source_ = random_tokens(sentence_lengths(src_len, batch, 7), options_.source_vocab, gen_, kEos);
  target_ = random_tokens(sentence_lengths(tgt_len, batch, 3), options_.target_vocab, gen_, kEos);
}

Var TransformerStep::batch_loss() {
  return model_->loss(source_.ids, source_.mask, target_.ids, target_.mask);
}

void TransformerStep::dump(const std::string& dir) {
  check(options_.layer.dropout == 0.0f, "--dump needs --set dropout=0 (the twin's check runs without dropout)");
  // Gains and biases start at exactly 1 and 0, which would hide a bias added
  // in the wrong place or a gain applied to the wrong norm: the check moves
  // every vector parameter off its init by N(0, 0.1²) (generator 5).
  Generator perturb(5);
  for (auto& [name, param] : model_->named_parameters())
    if (param.rank() == 1) param.value().add_(normal(param.shape(), 0.0f, 0.1f, perturb));
  const TransformerLayerOptions& layer = options_.layer;
  const std::string config =
      fmt::format("{{\"norm\": \"{}\", \"position\": \"{}\", \"vocab\": {}, \"d\": {}, \"ffn\": {}, "
                  "\"heads\": {}, \"layers\": {}, \"p\": {}, \"label_smoothing\": {}}}\n",
                  norm_name(layer.norm.kind), norm_position_name(layer.norm_position), options_.source_vocab,
                  layer.model_size, layer.ffn_size, layer.heads, options_.encoder_layers, layer.norm.p,
                  options_.label_smoothing);
  const CheckResult r = write_translation_check(dir, *model_, source_, target_, config);
  std::printf("bench_step: wrote %s (transformer, norm %s, %s-norm, loss %.6f, gradient norm %.6f)\n", dir.c_str(),
              norm_name(layer.norm.kind).c_str(), norm_position_name(layer.norm_position).c_str(), r.loss,
              r.grad_norm);
}

}  // namespace rg::bench
