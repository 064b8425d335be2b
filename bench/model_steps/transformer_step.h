#pragma once
// The Transformer (Vaswani et al. 2017; models/transformer.h) at the paper's
// Table 4 recipe with the CPU-sized Multi30k model of
// experiments/transformer/main.cpp: d 256, FFN 1024, 4 heads, 3 encoder and 3
// decoder layers, vocabularies of 8000 subwords, post-norm (--set
// position=pre for pre-norm), dropout 0.1, label smoothing 0.1, Adam β (0.9,
// 0.98), ε 1e-9, no clip. The learning rate is held at the schedule's peak
// (7e-4): the inverse-sqrt schedule changes the value, not the work. The
// PyTorch twin is bench/transformer_torch.py.
//
// The batch (time-major), as RNNSearch's (rnnsearch_step.h): with L the
// src_len (or tgt_len) and Lmin = max(1, L − 9), source b has length
// Lmin + (7b) mod (L − Lmin + 1) and target b Lmin + (3b) mod (L − Lmin + 1)
// (13–22 subwords for L = 22); ids uniform in [4, V), the last real token
// </s> (3); the padded tail masked. 186 sentence pairs: 186 × 22 = 4092
// padded tokens a side, what --batch-tokens 4096 (B × the longest sentence)
// packs for sentences of up to 22 subwords.
// Settings: batch src_len tgt_len vocab d ffn heads layers position dropout p
// label_smoothing.
#include <memory>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/models/transformer.h"
#include "rmsgrad/optim/adam.h"

namespace rg::bench {

class TransformerStep : public ModelStep {
 public:
  TransformerStep(const NormChoice& norm, Sizes& sizes);
  Var batch_loss() override;
  Module& model() override { return *model_; }
  void reshape(int64_t batch, int64_t src_len, int64_t tgt_len) override;
  // With dropout 0: DIR/params/<name>.npy (every gain and bias first moved
  // off 1 and 0 by N(0, 0.1²), so that the check sees them), the batch (ids
  // as float32), the gradients of one backward (DIR/grads/<name>.npy), the
  // sizes (config.json) and the loss and gradient norm (result.json), for
  // `transformer_torch.py --check DIR`.
  void dump(const std::string& dir) override;

 private:
  Generator gen_{0}, noise_gen_{1};
  TransformerOptions options_;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<Adam> adam_;
  TokenBatch source_, target_;
};

}  // namespace rg::bench
