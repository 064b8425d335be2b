#pragma once
// ConvPool-CNN-C (Springenberg et al. 2015, "Striving for Simplicity"), the
// CIFAR-10 network of Salimans & Kingma's weight-normalization code that Zhang
// & Sennrich 2019 (Table 10) train with every normalization:
//
//   input [N, 3, 32, 32] → Gaussian noise σ (training only)
//   3 × [conv 3×3, 96, pad 1 → norm → leaky ReLU 0.1]          32×32
//   max-pool 2×2 → dropout 0.5                                  16×16
//   3 × [conv 3×3, 192, pad 1 → norm → leaky ReLU]              16×16
//   max-pool 2×2 → dropout 0.5                                   8×8
//   conv 3×3, 192, no padding → norm → leaky ReLU                6×6
//   2 × [conv 1×1, 192 → norm → leaky ReLU]                      6×6
//   global average pool → dense 10 → norm → logits
//
// Where the norm goes (../shared/PAPER.md §2): after every conv, before the
// non-linearity, and after the dense output layer. On conv maps LayerNorm,
// RMSNorm, pRMSNorm and L2-Norm normalize each sample's channel map over H×W
// with a gain and a bias per channel; BatchNorm normalizes each channel over
// N×H×W; WeightNorm reparameterises every conv and the dense weight instead.
// pRMSNorm takes its RMS from the first 12.5% of each row; for the 10 logits
// that would be one unit, so the output layer falls back to the full RMS
// whenever the partial size would be below 4.
// A layer followed by a norm that has a bias of its own drops its own bias
// (it would be cancelled or duplicated); with `none` and `weightnorm` every
// layer keeps its bias.
//
// `width` scales every channel count (96, 192) so a CPU run can use fewer
// channels: width 0.25 gives 24 and 48.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/conv.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"

namespace rg {

struct ConvPoolCnnOptions {
  NormOptions norm;            // kind, p (12.5% for CIFAR), ε (1e-6 in the CIFAR code)
  double width = 1.0;          // channel multiplier
  int64_t classes = 10;
  float dropout = 0.5f;
  float input_noise = 0.15f;   // σ of the Gaussian input noise
  float leaky_slope = 0.1f;
};

class ConvPoolCnnC : public Module {
 public:
  // Weights are drawn from `init_gen`; dropout masks and input noise from
  // `noise_gen` (which must outlive the model, so a checkpoint can save it).
  ConvPoolCnnC(const ConvPoolCnnOptions& options, Generator& init_gen, Generator& noise_gen);

  // images [N, 3, 32, 32] (preprocessed) → logits [N, classes].
  Var forward(const Var& images);
  Var operator()(const Var& images) { return forward(images); }

  // Salimans & Kingma's data-dependent initialisation (weightnorm only): runs
  // one batch through the net layer by layer, and sets each layer's g and b so
  // that its output has zero mean and unit variance per unit on that batch.
  // Records nothing on the tape.
  void init_weight_norm(const Tensor& images);

  // "conv 3×3 96, pad 1" per conv layer, for the printed header.
  std::vector<std::string> describe() const;

 private:
  struct ConvBlock {
    std::shared_ptr<Conv2d> conv;
    std::shared_ptr<Norm> norm;
    int64_t in, out, kernel, padding;
  };
  Var block(const ConvBlock& b, const Var& x);

  ConvPoolCnnOptions options_;
  std::shared_ptr<GaussianNoise> noise_;
  std::deque<ConvBlock> blocks_;  // 9 convolutions, in order (a deque: the registry holds their members)
  std::shared_ptr<MaxPool2d> pool_;
  std::shared_ptr<Dropout> dropout_;
  std::shared_ptr<GlobalAvgPool> global_pool_;
  std::shared_ptr<Linear> dense_;
  std::shared_ptr<Norm> dense_norm_;
};

}  // namespace rg
