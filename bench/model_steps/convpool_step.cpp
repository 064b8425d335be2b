#include "bench/model_steps/convpool_step.h"

#include "rmsgrad/core/error.h"

namespace rg::bench {

ConvPoolStep::ConvPoolStep(const NormChoice& norm, Sizes& sizes) {
  ConvPoolCnnOptions options;
  options.width = sizes.real("width", 0.5);
  const int64_t batch = sizes.integer("batch", 100);
  check(options.width > 0, "convpool: width must be positive");
  options.norm.kind = norm.kind;
  options.norm.impl = norm.impl;
  options.norm.p = 0.125f;
  options.norm.eps = 1e-6f;
  {
    ScopedAllocationTag tag("parameters");
    model_ = std::make_unique<ConvPoolCnnC>(options, init_, noise_);
    adam_ = std::make_unique<Adam>(model_->named_parameters(),
                                   AdamOptions{.lr = norm.kind == NormKind::None ? 3e-4 : 3e-3});
  }
  {
    ScopedAllocationTag tag("inputs");
    images_ = normal(Shape{batch, 3, 32, 32}, 0.0f, 1.0f, data_);
  }
  for (int64_t i = 0; i < batch; ++i) labels_.push_back(static_cast<int32_t>(data_.randint(10)));
  if (norm.kind == NormKind::WeightNorm) model_->init_weight_norm(images_);
}

void ConvPoolStep::run() {
  Var loss = cross_entropy((*model_)(constant(images_)), Indices(labels_));
  adam_->zero_grad();
  backward(loss);
  update(*adam_, [] {});
  loss_ = loss.item();
  tape().clear();
}

}  // namespace rg::bench
