#include "bench/model_steps/order_embedding_step.h"

#include "rmsgrad/core/error.h"

#include "rmsgrad/optim/clip.h"

namespace rg::bench {

OrderEmbeddingStep::OrderEmbeddingStep(const NormChoice& norm, Sizes& sizes) {
  const int64_t batch = sizes.integer("batch", 128);
  OrderEmbeddingOptions options;
  options.embed_dim = sizes.integer("hidden", 1024);
  options.vocab_size = sizes.integer("vocab", 3000);
  check(options.vocab_size > 4, "order_embedding: vocab must be above 4");
  options.word_dim = sizes.integer("word_dim", 300);
  options.image_dim = sizes.integer("image_dim", 2048);
  options.similarity = parse_similarity(sizes.text("method", "order"));
  options.norm.kind = norm.kind;
  options.norm.impl = norm.impl;
  {
    ScopedAllocationTag tag("parameters");
    model_ = std::make_unique<OrderEmbeddingModel>(options, gen_);
    adam_ = std::make_unique<Adam>(model_->named_parameters(), AdamOptions{.lr = 1e-3});
    use_training_step(*adam_, {.clip = 2.0, .clip_per_parameter = true});  // the recipe's clip
  }
  std::vector<int64_t> lengths(batch);
  for (int64_t b = 0; b < batch; ++b) lengths[b] = 6 + (5 * b) % 12;
  captions_ = random_tokens(lengths, options.vocab_size, gen_);
  ScopedAllocationTag tag("inputs");
  images_ = normal(Shape{batch, options.image_dim}, 0.0f, 1.0f, gen_);
}

void OrderEmbeddingStep::run() {
  Var loss = model_->loss(captions_.ids, captions_.mask, constant(images_));
  take_step(loss);
}

}  // namespace rg::bench
