#include "rmsgrad/experiments/cifar10/cifar_config.h"
#include "rmsgrad/experiments/common/flags.h"

namespace rg::cifar {

void add_cifar_flags(CLI::App& app, CifarConfig& cfg) {
  add_run_options(app, cfg.run);
  app.add_option("--data", cfg.data,
                 "a folder of data_batch_*.bin (test_batch.bin optional), or image folders train/<class>/*.jpg "
                 "(a folder or .tar.gz); empty: synthetic images");
  add_norm_flags(app, cfg.norm, {"none", "batchnorm", "weightnorm", "layernorm", "rmsnorm", "prmsnorm", "l2norm"},
                 "in every layer");
  app.add_option("--width", cfg.width, "channel multiplier (1: the paper's 96 and 192 channels)")->check(rg::in_range(0.01, 64));
  app.add_option("--epochs", cfg.epochs, "training epochs")->check(rg::positive);
  app.add_option("--steps", cfg.steps, "cap on the number of steps (0: epochs × batches)")->check(rg::non_negative);
  app.add_option("--batch", cfg.batch, "images per step")->check(rg::in_range(1, 1 << 20));
  app.add_option("--lr", cfg.lr, "learning rate (0: 0.003, or 0.0003 for none)")->check(rg::non_negative);
  app.add_option("--valid-size", cfg.valid_size, "training images held out for validation")->check(rg::positive);
  app.add_option("--train-size", cfg.train_size, "use only this many training images (0: all)")
      ->check(rg::non_negative);
  app.add_option("--zca", cfg.zca, "ZCA whitening: on, off, or auto (on for real data, off for synthetic images)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--zca-cache", cfg.zca_cache, "folder caching the fitted ZCA transform (empty: no cache)");
  app.add_option("--eval-batch", cfg.eval_batch, "images per evaluation chunk")->check(rg::positive);
  add_trainer_flags(app, cfg.training);  // the schedule still spans the whole run
}

ConvPoolCnnOptions model_options(const CifarConfig& cfg) {
  ConvPoolCnnOptions options;
  options.norm = cfg.norm;
  options.width = cfg.width;
  return options;
}

AdamOptions adam_options(const CifarConfig& cfg) {
  AdamOptions adam = cfg.kRecipe.adam;
  adam.lr = cfg.lr > 0 ? cfg.lr : cfg.kRecipe.lr(cfg.norm.kind);
  return adam;
}

}  // namespace rg::cifar
