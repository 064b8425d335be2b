#pragma once
// The order-embedding model (Vendrov et al. 2016; models/order_embedding.h)
// at the paper's recipe: batch 128, word vectors 300, caption GRU 1024,
// image features 2048, order-violation (or cosine) contrastive loss, each
// parameter's gradient clipped to norm 2, Adam 1e-3. The PyTorch twin is
// bench/order_embedding_torch.py.
//
// The batch: caption b of length 6 + (5b) mod 12 (time-major ids and mask),
// random N(0, 1) image features, drawn from generator 0 after the parameters.
// Settings: batch hidden vocab word_dim image_dim method (order | cosine).
#include <memory>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/models/order_embedding.h"

namespace rg::bench {

class OrderEmbeddingStep : public ModelStep {
 public:
  OrderEmbeddingStep(const NormOptions& norm, Sizes& sizes);
  Var batch_loss() override;
  Module& model() override { return *model_; }

 private:
  Generator gen_{0};
  std::unique_ptr<OrderEmbeddingModel> model_;
  TokenBatch captions_;
  Tensor images_;
};

}  // namespace rg::bench
