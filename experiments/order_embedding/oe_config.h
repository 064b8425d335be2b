#pragma once
// The order-embedding driver's settings: every flag of
// experiments/order_embedding/main.cpp, with the recipe's defaults.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/experiments/common/norm_flags.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/models/order_embedding.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"

namespace rg::oe {

struct OeConfig {
  static constexpr OrderEmbeddingRecipe kRecipe{};
  RunOptions run{.out = "runs/order_embedding"};  // --seed --threads --out --config --resume --log-every
  std::string features;  // empty: the synthetic task
  std::vector<std::string> captions;
  int64_t captions_per_image = 5;  // for a single caption file
  NormOptions norm{.kind = NormKind::RMSNorm};
  std::string method = "order";
  float margin = 0.0f;  // 0: 0.05 for order, 0.2 for cosine
  int64_t word_dim = kRecipe.word_dim, embed_dim = kRecipe.embed_dim;
  int64_t batch = kRecipe.batch;
  double lr = kRecipe.adam.lr;
  TrainingOptions training{.steps = 2000,
                       .eval_every = 100,
                       .clip = kRecipe.clip.clip,
                       .clip_per_parameter = kRecipe.clip.clip_per_parameter,
                       .best_metric = "R@1+R@5+R@10 (image retrieval)"};
  int64_t min_count = 2;
  int64_t fold_images = 1000;
  int64_t synthetic_images = 2000, synthetic_dim = 256;
};

// Adds every flag of the driver to `app`.
void add_oe_flags(CLI::App& app, OeConfig& cfg);

// The model the settings make for a vocabulary of `vocab` words and image
// features of `image_dim`.
OrderEmbeddingOptions model_options(const OeConfig& cfg, int64_t vocab, int64_t image_dim);

}  // namespace rg::oe
