#pragma once
// ConvPool-CNN-C (Springenberg et al. 2015, as Salimans & Kingma train it;
// models/convpool_cnn.h) at width 0.5 and batch 100: input noise, dropout,
// cross-entropy, Adam 3e-3 (3e-4 without a norm); pRMSNorm's p 12.5% and ε
// 1e-6 as the paper's CIFAR code. The twins are bench/convpool_torch.py
// (PyTorch) and bench/convpool_jax.py (JAX).
// The batch: N(0, 1) images and uniform labels from generator 3.
// Settings: width batch dropout input_noise (σ of the Gaussian input noise).
#include <memory>
#include <string>
#include <vector>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/models/convpool_cnn.h"

namespace rg::bench {

class ConvPoolStep : public ModelStep {
 public:
  ConvPoolStep(const NormOptions& norm, Sizes& sizes);
  Var batch_loss() override;
  Module& model() override { return *model_; }
  // The twin's check, without input noise or dropout (bench_step --dump
  // sets both to 0): DIR/params/<name>.npy (every gain and
  // bias first moved off 1 and 0), the batch (images.npy, labels.npy as
  // float32), one backward's gradients (DIR/grads/<name>.npy), the sizes
  // (config.json) and the loss, gradient norm and parameter count
  // (result.json), for `convpool_jax.py --check DIR`.
  void dump(const std::string& dir) override;

 private:
  Generator init_{1}, noise_{2}, data_{3};
  ConvPoolCnnOptions options_;
  std::unique_ptr<ConvPoolCnnC> model_;
  Tensor images_;
  std::vector<int32_t> labels_;
};

}  // namespace rg::bench
