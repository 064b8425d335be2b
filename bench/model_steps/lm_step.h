#pragma once
// The LLaMA-style character language model (models/llama.h) at the lm
// driver's recipe (experiments/common/recipes.h): 4 blocks, d 256, 4 heads,
// SwiGLU 688, untied embeddings, 77 symbols; 32 windows of 128 characters;
// Adam β (0.9, 0.95), clip 1, the learning rate held at its peak (1e-3).
// The PyTorch twin is bench/lm_torch.py.
//
// The batch: ids [B, T + 1] uniform in [0, vocab) from generator 0, after the
// parameters; the model reads the first T columns and predicts the last T.
// Settings: batch context vocab d ffn heads layers p, and the recipe's
// lr beta1 beta2 eps clip clip_norm; embeddings=tied|untied.
#include <memory>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/models/llama.h"

namespace rg::bench {

class LanguageModelStep : public ModelStep {
 public:
  LanguageModelStep(const NormOptions& norm, Sizes& sizes);
  Var batch_loss() override;
  Module& model() override { return *model_; }
  // DIR/params/<name>.npy (every gain and bias first moved off 1 and 0 by
  // N(0, 0.1²)), the batch (ids.npy, as float32), one backward's gradients
  // (DIR/grads/<name>.npy), the sizes (config.json) and the loss and
  // gradient norm (result.json), for `lm_torch.py --check DIR`.
  void dump(const std::string& dir) override;

 private:
  Generator gen_{0};
  LlamaOptions options_;
  int64_t batch_ = 0, context_ = 0;
  std::unique_ptr<Llama> model_;
  Indices inputs_, targets_;
  Tensor ids_;  // [B, T + 1] as float32, for dump
};

}  // namespace rg::bench
