#pragma once
// The CIFAR-10 driver's settings: every flag of experiments/cifar10/main.cpp,
// with the recipe's defaults.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/experiments/common/norm_flags.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/models/convpool_cnn.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"

namespace rg::cifar {

struct CifarConfig {
  static constexpr ConvPoolRecipe kRecipe{};
  RunOptions run{.out = "runs/cifar10"};  // --seed --threads --out --config --resume --log-every
  std::string data;              // empty: the synthetic task
  NormOptions norm{.kind = NormKind::LayerNorm, .p = kRecipe.p, .eps = kRecipe.eps};
  double width = kRecipe.width;
  int64_t epochs = 200;
  int64_t steps = 0;             // 0: epochs × batches per epoch
  int64_t batch = kRecipe.batch;
  double lr = 0.0;               // 0: the recipe's, 0.003 (0.0003 for none)
  int64_t valid_size = 5000;
  int64_t train_size = 0;        // 0: every training image (synthetic: 10,000)
  std::string zca = "auto";      // auto: on for real data, off for the synthetic images
  std::string zca_cache = "runs/zca-cache";
  int64_t eval_batch = 500;
  TrainingOptions training;          // steps and eval_every follow from the data; --stop-after
};

// Adds every flag of the driver to `app`.
void add_cifar_flags(CLI::App& app, CifarConfig& cfg);

// The model the settings make: ConvPool-CNN-C of --width with the --norm flags.
ConvPoolCnnOptions model_options(const CifarConfig& cfg);
// The recipe's Adam at --lr, or at the recipe's rate for the norm when --lr is 0.
AdamOptions adam_options(const CifarConfig& cfg);

}  // namespace rg::cifar
