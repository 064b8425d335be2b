#include "bench/model_steps/lm_step.h"

#include <cstdio>
#include <filesystem>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/npy.h"
#include "rmsgrad/experiments/lm/lm_config.h"

namespace rg::bench {

LanguageModelStep::LanguageModelStep(const NormOptions& norm, Sizes& sizes) {
  lm::LmConfig cfg;
  batch_ = cfg.batch = sizes.integer("batch", cfg.batch);
  context_ = cfg.context = sizes.integer("context", cfg.context);
  const int64_t vocab = sizes.integer("vocab", cfg.kRecipe.vocab);
  cfg.model_size = sizes.integer("d", cfg.model_size);
  cfg.ffn = sizes.integer("ffn", cfg.ffn);
  cfg.heads = sizes.integer("heads", cfg.heads);
  cfg.layers = sizes.integer("layers", cfg.layers);
  cfg.norm = norm;
  cfg.norm.p = static_cast<float>(sizes.real("p", 0.0625));
  const std::string embeddings = sizes.text("embeddings", "untied");
  check(embeddings == "tied" || embeddings == "untied", "lm: --set embeddings=tied or untied, not {}", embeddings);
  cfg.tie = embeddings == "tied";
  options_ = lm::model_options(cfg, vocab);
  const AdamOptions adam = read_adam(sizes, cfg.kRecipe.adam);
  const ClipOptions clip = read_clip(sizes, cfg.kRecipe.clip);
  {
    ObserverScope scope("parameters");
    model_ = std::make_unique<Llama>(options_, gen_);
    model_->train();
  }
  {
    ObserverScope scope("inputs");
    ids_ = Tensor::zeros(Shape{batch_, context_ + 1});
    std::vector<int32_t> inputs, targets;
    for (int64_t b = 0; b < batch_; ++b)
      for (int64_t t = 0; t <= context_; ++t) {
        const auto id = static_cast<int32_t>(gen_.randint(options_.vocab));
        ids_.data()[b * (context_ + 1) + t] = static_cast<float>(id);
        if (t < context_) inputs.push_back(id);
        if (t > 0) targets.push_back(id);
      }
    inputs_ = Indices(Shape{batch_, context_}, std::move(inputs));
    targets_ = Indices(std::move(targets));
  }
  use_adam(adam, clip);
}

Var LanguageModelStep::batch_loss() {
  return cross_entropy(rg::reshape(model_->forward(inputs_), {batch_ * context_, options_.vocab}), targets_);
}

void LanguageModelStep::dump(const std::string& dir) {
  perturb_vector_parameters(*model_);
  std::filesystem::create_directories(dir);
  write_npy((std::filesystem::path(dir) / "ids.npy").string(), ids_);
  const std::string config = fmt::format(
      "{{\"norm\": \"{}\", \"vocab\": {}, \"d\": {}, \"ffn\": {}, \"heads\": {}, \"layers\": {}, \"p\": {}, "
      "\"tie\": {}, \"rotary_base\": {}, \"eps\": {}}}\n",
      norm_name(options_.norm.kind), options_.vocab, options_.model_size, options_.ffn_size, options_.heads,
      options_.layers, options_.norm.p, options_.tie_embeddings ? 1 : 0, options_.rotary_base, options_.norm.eps);
  const CheckResult r = write_model_check(dir, *model_, [&] { return batch_loss(); }, config);
  std::printf("bench_step: wrote %s (lm, norm %s, loss %.6f, gradient norm %.6f)\n", dir.c_str(),
              norm_name(options_.norm.kind).c_str(), r.loss, r.grad_norm);
}

}  // namespace rg::bench
