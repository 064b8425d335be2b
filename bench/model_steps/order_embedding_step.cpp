#include "bench/model_steps/order_embedding_step.h"

#include "rmsgrad/core/error.h"

#include "rmsgrad/experiments/order_embedding/oe_config.h"

namespace rg::bench {

OrderEmbeddingStep::OrderEmbeddingStep(const NormOptions& norm, Sizes& sizes) {
  oe::OeConfig cfg;
  const int64_t batch = sizes.integer("batch", cfg.batch);
  cfg.embed_dim = sizes.integer("hidden", cfg.embed_dim);
  const int64_t vocab = sizes.integer("vocab", 3000);
  check(vocab > 4, "order_embedding: vocab must be above 4");
  cfg.word_dim = sizes.integer("word_dim", cfg.word_dim);
  const int64_t image_dim = sizes.integer("image_dim", 2048);
  cfg.method = sizes.text("method", cfg.method);
  cfg.norm = norm;
  const OrderEmbeddingOptions options = oe::model_options(cfg, vocab, image_dim);
  const AdamOptions adam = read_adam(sizes, cfg.kRecipe.adam);
  const ClipOptions clip = read_clip(sizes, cfg.kRecipe.clip);
  {
    ObserverScope scope("parameters");
    model_ = std::make_unique<OrderEmbeddingModel>(options, gen_);
    use_adam(adam, clip);
  }
  std::vector<int64_t> lengths(batch);
  for (int64_t b = 0; b < batch; ++b) lengths[b] = 6 + (5 * b) % 12;
  captions_ = random_tokens(lengths, options.vocab_size, gen_);
  ObserverScope scope("inputs");
  images_ = normal(Shape{batch, options.image_dim}, 0.0f, 1.0f, gen_);
}

Var OrderEmbeddingStep::batch_loss() {
  return model_->loss(captions_.ids, captions_.mask, constant(images_));
}

}  // namespace rg::bench
