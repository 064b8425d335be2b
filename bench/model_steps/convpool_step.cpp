#include "bench/model_steps/convpool_step.h"

#include "rmsgrad/core/error.h"

#include <cstdio>
#include <filesystem>

#include "rmsgrad/experiments/common/npy.h"
#include "rmsgrad/optim/clip.h"

namespace rg::bench {

ConvPoolStep::ConvPoolStep(const NormChoice& norm, Sizes& sizes) {
  const ConvPoolRecipe recipe;
  options_.width = sizes.real("width", recipe.width);
  const int64_t batch = sizes.integer("batch", recipe.batch);
  check(options_.width > 0, "convpool: width must be positive");
  options_.dropout = sizes.real("dropout", options_.dropout);
  options_.input_noise = sizes.real("input_noise", options_.input_noise);
  options_.norm.kind = norm.kind;
  options_.norm.impl = norm.impl;
  options_.norm.p = recipe.p;
  options_.norm.eps = recipe.eps;
  AdamOptions recipe_adam = recipe.adam;
  recipe_adam.lr = recipe.lr(norm.kind);
  const AdamOptions adam = read_adam(sizes, recipe_adam);
  const ClipOptions clip = read_clip(sizes, recipe.clip);
  {
    ObserverScope scope("parameters");
    model_ = std::make_unique<ConvPoolCnnC>(options_, init_, noise_);
    adam_ = std::make_unique<Adam>(model_->named_parameters(), adam);
    use_training_step(*adam_, clip);
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
  // Gains and biases start at exactly 1 and 0, which would hide a bias added
  // in the wrong place or a gain applied to the wrong channel: the check
  // moves every vector parameter off its init by N(0, 0.1²) (generator 5),
  // as the Transformer's dump does.
  Generator perturb(5);
  for (auto& [name, param] : model_->named_parameters())
    if (param.rank() == 1) param.value().add_(normal(param.shape(), 0.0f, 0.1f, perturb));

  namespace fs = std::filesystem;
  const fs::path root(dir);
  fs::create_directories(root / "params");
  fs::create_directories(root / "grads");
  for (const auto& [name, param] : model_->named_parameters())
    write_npy((root / "params" / (name + ".npy")).string(), param.value());
  write_npy((root / "images.npy").string(), images_);
  Tensor labels = Tensor::empty(Shape{static_cast<int64_t>(labels_.size())});
  for (size_t i = 0; i < labels_.size(); ++i) labels.data()[i] = static_cast<float>(labels_[i]);
  write_npy((root / "labels.npy").string(), labels);

  // One forward and backward in training mode: BatchNorm uses the batch's
  // statistics, as in a training step.
  Var loss = cross_entropy((*model_)(constant(images_)), Indices(labels_));
  model_->zero_grad();
  loss.backward();
  const double norm = grad_norm(model_->named_parameters());
  for (auto& [name, param] : model_->named_parameters())
    write_npy((root / "grads" / (name + ".npy")).string(), param.grad());
  write_text((root / "config.json").string(),
             fmt::format("{{\"norm\": \"{}\", \"width\": {}, \"batch\": {}, \"p\": {}, \"eps\": {}, "
                         "\"classes\": {}, \"leaky_slope\": {}}}\n",
                         norm_name(options_.norm.kind), options_.width, labels_.size(), options_.norm.p,
                         options_.norm.eps, options_.classes, options_.leaky_slope));
  write_text((root / "result.json").string(),
             fmt::format("{{\"loss\": {:.9g}, \"grad_norm\": {:.9g}, \"parameters\": {}}}\n", loss.item(), norm,
                         model_->parameter_count()));
  std::printf("bench_step: wrote %s (convpool, norm %s, loss %.6f, gradient norm %.6f)\n", dir.c_str(),
              norm_name(options_.norm.kind).c_str(), loss.item(), norm);
  tape().clear();
}

}  // namespace rg::bench
