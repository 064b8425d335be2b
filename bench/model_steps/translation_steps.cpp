#include "bench/model_steps/translation_steps.h"

#include <algorithm>
#include <cstdio>

#include "rmsgrad/core/error.h"

namespace rg::bench {

void TranslationStep::read_vocab(Sizes& sizes, int64_t fallback, std::string_view model) {
  vocab_ = sizes.integer("vocab", fallback);
  check(vocab_ > 4, "{}: vocab must be above 4", model);
}

void TranslationStep::start(const std::function<std::unique_ptr<Seq2Seq>()>& make, int64_t batch, int64_t src_len,
                            int64_t tgt_len) {
  {
    ObserverScope scope("parameters");
    model_ = make();
    model_->train();
  }
  reshape(batch, src_len, tgt_len);
  use_adam(cfg_.adam, clip_);
}

void TranslationStep::reshape(int64_t batch, int64_t src_len, int64_t tgt_len) {
  source_ = random_tokens(sentence_lengths(src_len, batch, 7), vocab_, gen_, kEos);
  target_ = random_tokens(sentence_lengths(tgt_len, batch, 3), vocab_, gen_, kEos);
}

Var TranslationStep::batch_loss() { return model_->loss(source_.ids, source_.mask, target_.ids, target_.mask); }

CheckResult TranslationStep::write_check(const std::string& dir, const std::string& config_json) {
  check(cfg_.dropout == 0.0f, "--dump needs --set dropout=0 (the twin's check runs without dropout)");
  return write_translation_check(dir, *model_, source_, target_, config_json);
}

RnnSearchStep::RnnSearchStep(const NormOptions& norm, Sizes& sizes) {
  const RNNSearchRecipe recipe;
  const int64_t batch = sizes.integer("batch", recipe.batch);
  const int64_t src_len = sizes.integer("src_len", 22), tgt_len = sizes.integer("tgt_len", 22);
  read_vocab(sizes, recipe.vocab, "rnnsearch");
  settings_.embed = sizes.integer("embed", settings_.embed);
  settings_.hidden = sizes.integer("hidden", settings_.hidden);
  read_shared(recipe, norm, sizes);
  start([&] { return std::make_unique<RNNSearch>(rnnsearch_options(cfg_, settings_, vocab_), gen_, noise_gen_); },
        batch, src_len, tgt_len);
}

void RnnSearchStep::dump(const std::string& dir) {
  const std::string config =
      fmt::format("{{\"norm\": \"{}\", \"vocab\": {}, \"embed\": {}, \"hidden\": {}, \"p\": {}, "
                  "\"label_smoothing\": {}}}\n",
                  norm_name(cfg_.norm.kind), vocab_, settings_.embed, settings_.hidden, cfg_.norm.p,
                  cfg_.label_smoothing);
  const CheckResult r = write_check(dir, config);
  std::printf("bench_step: wrote %s (rnnsearch, norm %s, loss %.6f, gradient norm %.6f)\n", dir.c_str(),
              norm_name(cfg_.norm.kind).c_str(), r.loss, r.grad_norm);
}

TransformerStep::TransformerStep(const NormOptions& norm, Sizes& sizes) {
  // The recipe's batch is counted in tokens: sentences of up to tgt_len of them.
  const TransformerRecipe recipe;
  const int64_t src_len = sizes.integer("src_len", 22), tgt_len = sizes.integer("tgt_len", 22);
  const int64_t batch = sizes.integer("batch", recipe.batch_tokens / std::max(src_len, tgt_len));
  read_vocab(sizes, recipe.vocab, "transformer");
  settings_.model_size = sizes.integer("d", settings_.model_size);
  settings_.ffn = sizes.integer("ffn", settings_.ffn);
  settings_.heads = sizes.integer("heads", settings_.heads);
  settings_.layers = sizes.integer("layers", settings_.layers);
  settings_.norm_position = sizes.text("position", settings_.norm_position);
  read_shared(recipe, norm, sizes);
  start([&] {
    return std::make_unique<Transformer>(transformer_options(cfg_, settings_, vocab_), gen_, noise_gen_);
  }, batch, src_len, tgt_len);
}

void TransformerStep::dump(const std::string& dir) {
  check(cfg_.dropout == 0.0f, "--dump needs --set dropout=0 (the twin's check runs without dropout)");
  perturb_vector_parameters(model());
  const std::string position = norm_position_name(parse_norm_position(settings_.norm_position));
  const std::string config =
      fmt::format("{{\"norm\": \"{}\", \"position\": \"{}\", \"vocab\": {}, \"d\": {}, \"ffn\": {}, "
                  "\"heads\": {}, \"layers\": {}, \"p\": {}, \"label_smoothing\": {}}}\n",
                  norm_name(cfg_.norm.kind), position, vocab_, settings_.model_size, settings_.ffn, settings_.heads,
                  settings_.layers, cfg_.norm.p, cfg_.label_smoothing);
  const CheckResult r = write_check(dir, config);
  std::printf("bench_step: wrote %s (transformer, norm %s, %s-norm, loss %.6f, gradient norm %.6f)\n", dir.c_str(),
              norm_name(cfg_.norm.kind).c_str(), position.c_str(), r.loss, r.grad_norm);
}

}  // namespace rg::bench
