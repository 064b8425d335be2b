#pragma once
// RNNSearch (Bahdanau et al. 2015, as Nematus builds it; models/rnnsearch.h)
// at the paper's Multi30k recipe: batch 80, word vectors and GRUs of 256,
// vocabularies of 8000 subwords, dropout 0.2, label smoothing 0.1, global
// clip 1, Adam 1e-4. The PyTorch twin is bench/rnnsearch_torch.py.
//
// The batch (time-major): with L the src_len (or tgt_len) and
// Lmin = max(1, L − 9), source b has length Lmin + (7b) mod (L − Lmin + 1) and
// target b Lmin + (3b) mod (L − Lmin + 1) (13–22 subwords for L = 22); ids
// uniform in [4, V), the last real token </s> (3); the padded tail masked.
// Settings: batch src_len tgt_len vocab embed hidden dropout p label_smoothing.
#include <memory>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/models/rnnsearch.h"
#include "rmsgrad/optim/adam.h"

namespace rg::bench {

class RnnSearchStep : public ModelStep {
 public:
  RnnSearchStep(const NormChoice& norm, Sizes& sizes);
  Var batch_loss() override;
  Module& model() override { return *model_; }
  void reshape(int64_t batch, int64_t src_len, int64_t tgt_len) override;
  // With dropout 0: DIR/params/<name>.npy, the batch (ids as float32), the
  // gradients of one backward (DIR/grads/<name>.npy), the sizes
  // (config.json) and the loss and gradient norm (result.json), for
  // `rnnsearch_torch.py --check DIR`.
  void dump(const std::string& dir) override;

 private:
  Generator gen_{0}, noise_gen_{1};
  RNNSearchOptions options_;
  std::unique_ptr<RNNSearch> model_;
  std::unique_ptr<Adam> adam_;
  TokenBatch source_, target_;
};

}  // namespace rg::bench
