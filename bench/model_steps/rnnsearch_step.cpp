#include "bench/model_steps/rnnsearch_step.h"

#include "rmsgrad/core/error.h"

#include <cstdio>
#include <filesystem>

#include "rmsgrad/experiments/common/npy.h"
#include "rmsgrad/optim/clip.h"

namespace rg::bench {

RnnSearchStep::RnnSearchStep(const NormChoice& norm, Sizes& sizes) {
  const RNNSearchRecipe recipe;
  const int64_t batch = sizes.integer("batch", recipe.batch);
  const int64_t src_len = sizes.integer("src_len", 22), tgt_len = sizes.integer("tgt_len", 22);
  options_.source_vocab = options_.target_vocab = sizes.integer("vocab", recipe.vocab);
  check(options_.source_vocab > 4, "rnnsearch: vocab must be above 4");
  options_.embed = sizes.integer("embed", recipe.embed);
  options_.hidden = sizes.integer("hidden", recipe.hidden);
  options_.norm.kind = norm.kind;
  options_.norm.impl = norm.impl;
  options_.norm.p = static_cast<float>(sizes.real("p", 0.0625));
  options_.dropout = sizes.real("dropout", recipe.dropout);
  options_.label_smoothing = sizes.real("label_smoothing", recipe.label_smoothing);
  const AdamOptions adam = read_adam(sizes, recipe.adam);
  const ClipOptions clip = read_clip(sizes, recipe.clip);
  {
    ObserverScope scope("parameters");
    model_ = std::make_unique<RNNSearch>(options_, gen_, noise_gen_);
    model_->train();
  }
  reshape(batch, src_len, tgt_len);
  adam_ = std::make_unique<Adam>(model_->named_parameters(), adam);
  use_training_step(*adam_, clip);
}

void RnnSearchStep::reshape(int64_t batch, int64_t src_len, int64_t tgt_len) {
  source_ = random_tokens(sentence_lengths(src_len, batch, 7), options_.source_vocab, gen_, kEos);
  target_ = random_tokens(sentence_lengths(tgt_len, batch, 3), options_.target_vocab, gen_, kEos);
}

Var RnnSearchStep::batch_loss() {
  return model_->loss(source_.ids, source_.mask, target_.ids, target_.mask);
}

void RnnSearchStep::dump(const std::string& dir) {
  check(options_.dropout == 0.0f, "--dump needs --set dropout=0 (the twin's check runs without dropout)");
  const std::string config =
      fmt::format("{{\"norm\": \"{}\", \"vocab\": {}, \"embed\": {}, \"hidden\": {}, \"p\": {}, "
                  "\"label_smoothing\": {}}}\n",
                  norm_name(options_.norm.kind), options_.source_vocab, options_.embed, options_.hidden,
                  options_.norm.p, options_.label_smoothing);
  const CheckResult r = write_translation_check(dir, *model_, source_, target_, config);
  std::printf("bench_step: wrote %s (rnnsearch, norm %s, loss %.6f, gradient norm %.6f)\n", dir.c_str(),
              norm_name(options_.norm.kind).c_str(), r.loss, r.grad_norm);
}

}  // namespace rg::bench
