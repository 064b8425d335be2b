#include "bench/model_steps/convpool_step.h"

#include "rmsgrad/core/error.h"

#include <cstdio>
#include <filesystem>

#include "rmsgrad/experiments/cifar10/cifar_config.h"
#include "rmsgrad/experiments/common/npy.h"

namespace rg::bench {

ConvPoolStep::ConvPoolStep(const NormOptions& norm, Sizes& sizes) {
  // The driver's settings: its norm's p and ε are the recipe's.
  cifar::CifarConfig cfg;
  cfg.width = sizes.real("width", cfg.width);
  const int64_t batch = sizes.integer("batch", cfg.batch);
  check(cfg.width > 0, "convpool: width must be positive");
  cfg.norm.kind = norm.kind;
  cfg.norm.impl = norm.impl;
  options_ = cifar::model_options(cfg);
  options_.dropout = sizes.real("dropout", options_.dropout);
  options_.input_noise = sizes.real("input_noise", options_.input_noise);
  const AdamOptions adam = read_adam(sizes, cifar::adam_options(cfg));
  const ClipOptions clip = read_clip(sizes, cfg.kRecipe.clip);
  {
    ObserverScope scope("parameters");
    model_ = std::make_unique<ConvPoolCnnC>(options_, init_, noise_);
    use_adam(adam, clip);
  }
  {
    ObserverScope scope("inputs");
    images_ = normal(Shape{batch, 3, 32, 32}, 0.0f, 1.0f, data_);
  }
  for (int64_t i = 0; i < batch; ++i) labels_.push_back(static_cast<int32_t>(data_.randint(10)));
  if (norm.kind == NormKind::WeightNorm) model_->init_weight_norm(images_);
}

Var ConvPoolStep::batch_loss() {
  return cross_entropy((*model_)(constant(images_)), Indices(labels_));
}

void ConvPoolStep::dump(const std::string& dir) {
  check(options_.dropout == 0.0f && options_.input_noise == 0.0f,
        "--dump needs input_noise=0 and dropout=0 (bench_step --dump sets both): the twin's check runs without "
        "noise and dropout");
  perturb_vector_parameters(*model_);
  namespace fs = std::filesystem;
  const fs::path root(dir);
  fs::create_directories(root);
  write_npy((root / "images.npy").string(), images_);
  Tensor labels = Tensor::empty(Shape{static_cast<int64_t>(labels_.size())});
  for (size_t i = 0; i < labels_.size(); ++i) labels.data()[i] = static_cast<float>(labels_[i]);
  write_npy((root / "labels.npy").string(), labels);
  const std::string config =
      fmt::format("{{\"norm\": \"{}\", \"width\": {}, \"batch\": {}, \"p\": {}, \"eps\": {}, "
                  "\"classes\": {}, \"leaky_slope\": {}}}\n",
                  norm_name(options_.norm.kind), options_.width, labels_.size(), options_.norm.p, options_.norm.eps,
                  options_.classes, options_.leaky_slope);
  // One forward and backward in training mode: BatchNorm uses the batch's
  // statistics, as in a training step.
  const CheckResult r = write_model_check(dir, *model_, [&] { return batch_loss(); }, config);
  std::printf("bench_step: wrote %s (convpool, norm %s, loss %.6f, gradient norm %.6f)\n", dir.c_str(),
              norm_name(options_.norm.kind).c_str(), r.loss, r.grad_norm);
}

}  // namespace rg::bench
