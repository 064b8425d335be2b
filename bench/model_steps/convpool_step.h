#pragma once
// ConvPool-CNN-C (Springenberg et al. 2015, as Salimans & Kingma train it;
// models/convpool_cnn.h) at width 0.5 and batch 100: input noise, dropout,
// cross-entropy, Adam 3e-3 (3e-4 without a norm); pRMSNorm's p 12.5% and ε
// 1e-6 as the paper's CIFAR code. The PyTorch twin is bench/convpool_torch.py.
// The batch: N(0, 1) images and uniform labels from generator 3.
// Settings: width batch.
#include <memory>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/models/convpool_cnn.h"
#include "rmsgrad/optim/adam.h"

namespace rg::bench {

class ConvPoolStep : public ModelStep {
 public:
  ConvPoolStep(const NormChoice& norm, Sizes& sizes);
  void run() override;
  Module& model() override { return *model_; }

 private:
  Generator init_{1}, noise_{2}, data_{3};
  std::unique_ptr<ConvPoolCnnC> model_;
  std::unique_ptr<Adam> adam_;
  Tensor images_;
  std::vector<int32_t> labels_;
};

}  // namespace rg::bench
