#include "bench/model_steps/order_embedding_step.h"

#include "rmsgrad/core/error.h"

#include "rmsgrad/optim/clip.h"

namespace rg::bench {

OrderEmbeddingStep::OrderEmbeddingStep(const NormChoice& norm, Sizes& sizes) {
  const OrderEmbeddingRecipe recipe;
  const int64_t batch = sizes.integer("batch", recipe.batch);
  OrderEmbeddingOptions options;
  options.embed_dim = sizes.integer("hidden", recipe.embed_dim);
  options.vocab_size = sizes.integer("vocab", 3000);
  check(options.vocab_size > 4, "order_embedding: vocab must be above 4");
  options.word_dim = sizes.integer("word_dim", recipe.word_dim);
  options.image_dim = sizes.integer("image_dim", 2048);
  options.similarity = parse_similarity(sizes.text("method", "order"));
  options.norm.kind = norm.kind;
  options.norm.impl = norm.impl;
  const AdamOptions adam = read_adam(sizes, recipe.adam);
  const ClipOptions clip = read_clip(sizes, recipe.clip);
  {
    ObserverScope scope("parameters");
    model_ = std::make_unique<OrderEmbeddingModel>(options, gen_);
    adam_ = std::make_unique<Adam>(model_->named_parameters(), adam);
    use_training_step(*adam_, clip);
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
