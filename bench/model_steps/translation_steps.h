#pragma once
// The translation models, each built by its driver's own function
// (experiments/translation/translation_models.h) from its recipe, on one
// batch of sentence pairs. The PyTorch twins are bench/rnnsearch_torch.py and
// bench/transformer_torch.py.
//
// The batch (time-major): with L the src_len (or tgt_len) and
// Lmin = max(1, L − 9), source b has length Lmin + (7b) mod (L − Lmin + 1) and
// target b Lmin + (3b) mod (L − Lmin + 1) (13–22 subwords for L = 22); ids
// uniform in [4, V), the last real token </s> (3); the padded tail masked.
//
// Each model's check for its twin (dump), with dropout 0: DIR/params/<name>.npy,
// the batch (ids as float32), the gradients of one backward
// (DIR/grads/<name>.npy), the sizes (config.json) and the loss and gradient
// norm (result.json), for `<model>_torch.py --check DIR`.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/experiments/translation/translation_models.h"

namespace rg::bench {

class TranslationStep : public ModelStep {
 public:
  Var batch_loss() override;
  Module& model() override { return *model_; }
  void reshape(int64_t batch, int64_t src_len, int64_t tgt_len) override;

 protected:
  // The subword vocabulary, "vocab" (above 4: the ids below are reserved).
  void read_vocab(Sizes& sizes, int64_t fallback, std::string_view model);
  // The settings after the model's own: p, dropout and label_smoothing into
  // the driver's settings (translation_config of `recipe`, its norm `norm`),
  // then Adam and the clip.
  template <class Recipe>
  void read_shared(const Recipe& recipe, const NormOptions& norm, Sizes& sizes) {
    cfg_ = translation_config(recipe, "");
    cfg_.norm = norm;
    cfg_.norm.p = static_cast<float>(sizes.real("p", 0.0625));
    cfg_.dropout = sizes.real("dropout", cfg_.dropout);
    cfg_.label_smoothing = sizes.real("label_smoothing", cfg_.label_smoothing);
    cfg_.adam = read_adam(sizes, cfg_.adam);
    clip_ = read_clip(sizes, recipe.clip);
  }
  // The model `make` draws from the step's generators, the batch, and the
  // drivers' training step with Adam.
  void start(const std::function<std::unique_ptr<Seq2Seq>()>& make, int64_t batch, int64_t src_len,
             int64_t tgt_len);
  // The twin's check of the model with the settings `config_json`; "--dump" needs dropout 0.
  CheckResult write_check(const std::string& dir, const std::string& config_json);

  Generator gen_{0}, noise_gen_{1};
  int64_t vocab_ = 0;
  TranslationConfig cfg_;

 private:
  ClipOptions clip_;
  std::unique_ptr<Seq2Seq> model_;
  TokenBatch source_, target_;
};

// RNNSearch (Bahdanau et al. 2015, as Nematus builds it; models/rnnsearch.h)
// at the paper's Multi30k recipe: batch 80, word vectors and GRUs of 256,
// vocabularies of 8000 subwords, dropout 0.2, label smoothing 0.1, global
// clip 1, Adam 1e-4.
// Settings: batch src_len tgt_len vocab embed hidden p dropout label_smoothing.
class RnnSearchStep : public TranslationStep {
 public:
  RnnSearchStep(const NormOptions& norm, Sizes& sizes);
  void dump(const std::string& dir) override;

 private:
  RNNSearchSettings settings_;
};

// The Transformer (Vaswani et al. 2017; models/transformer.h) at the paper's
// Table 4 recipe with the CPU-sized Multi30k model of
// experiments/transformer/main.cpp: d 256, FFN 1024, 4 heads, 3 encoder and 3
// decoder layers, vocabularies of 8000 subwords, post-norm (--set
// position=pre for pre-norm), dropout 0.1, label smoothing 0.1, Adam β (0.9,
// 0.98), ε 1e-9, no clip. The learning rate is held at the schedule's peak
// (7e-4): the inverse-sqrt schedule changes the value, not the work.
// 186 sentence pairs by default: 186 × 22 = 4092 padded tokens a side, what
// --batch-tokens 4096 (B × the longest sentence) packs for sentences of up
// to 22 subwords. Its check moves every gain and bias off 1 and 0 first
// (perturb_vector_parameters).
// Settings: src_len tgt_len batch vocab d ffn heads layers position p dropout
// label_smoothing.
class TransformerStep : public TranslationStep {
 public:
  TransformerStep(const NormOptions& norm, Sizes& sizes);
  void dump(const std::string& dir) override;

 private:
  TransformerSettings settings_;
};

}  // namespace rg::bench
