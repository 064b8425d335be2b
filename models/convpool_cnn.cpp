#include "rmsgrad/models/convpool_cnn.h"

#include <algorithm>
#include <cmath>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/activations.h"

namespace rg {

namespace {

// Norms that end in a bias of their own make the layer's bias redundant.
bool norm_has_bias(NormKind kind) {
  return kind == NormKind::LayerNorm || kind == NormKind::BatchNorm || kind == NormKind::RMSNorm ||
         kind == NormKind::PRMSNorm || kind == NormKind::L2Norm;
}

int64_t scaled(int64_t channels, double width) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::lround(static_cast<double>(channels) * width)));
}

}  // namespace

ConvPoolCnnC::ConvPoolCnnC(const ConvPoolCnnOptions& options, Generator& init_gen, Generator& noise_gen)
    : options_(options) {
  check(options.width > 0.0, "ConvPoolCnnC: width must be positive, got {}", options.width);
  check(options.classes >= 2, "ConvPoolCnnC: needs at least 2 classes, got {}", options.classes);
  // The CIFAR code gives every normalization layer a gain and a bias per
  // channel (per unit for the dense layer), RMSNorm's family included.
  NormOptions norm = options.norm;
  norm.rms_bias = true;
  const bool weight_norm = norm.kind == NormKind::WeightNorm;
  const bool layer_bias = !norm_has_bias(norm.kind);

  register_module("noise", noise_, std::make_shared<GaussianNoise>(options.input_noise, noise_gen));
  const int64_t c1 = scaled(96, options.width), c2 = scaled(192, options.width);
  struct Spec {
    int64_t in, out, kernel, padding;
  };
  const Spec specs[] = {{3, c1, 3, 1},  {c1, c1, 3, 1}, {c1, c1, 3, 1}, {c1, c2, 3, 1}, {c2, c2, 3, 1},
                        {c2, c2, 3, 1}, {c2, c2, 3, 0}, {c2, c2, 1, 0}, {c2, c2, 1, 0}};
  for (size_t i = 0; i < std::size(specs); ++i) {
    const Spec& s = specs[i];
    Conv2dOptions conv_options;
    conv_options.padding = s.padding;
    conv_options.bias = layer_bias;
    conv_options.weight_norm = weight_norm;
    // Salimans' code draws v from N(0, 0.05²) and lets the data-dependent
    // init set the scale; the others start from Glorot's uniform.
    conv_options.init = weight_norm ? WeightInit{.kind = WeightInitKind::Normal, .stddev = 0.05f} : WeightInit{};
    const std::string n = std::to_string(i + 1);
    ConvBlock& b = blocks_.emplace_back();
    register_module("conv" + n, b.conv, std::make_shared<Conv2d>(s.in, s.out, s.kernel, init_gen, conv_options));
    register_module("norm" + n, b.norm, make_norm(norm, s.out, NormLayout::Channels));
    b.in = s.in;
    b.out = s.out;
    b.kernel = s.kernel;
    b.padding = s.padding;
  }
  register_module("pool", pool_, std::make_shared<MaxPool2d>(2, 2));
  register_module("dropout", dropout_, std::make_shared<Dropout>(options.dropout, noise_gen));
  register_module("global_pool", global_pool_, std::make_shared<GlobalAvgPool>());
  LinearOptions dense_options;
  dense_options.bias = layer_bias;
  dense_options.weight_norm = weight_norm;
  dense_options.init = weight_norm ? WeightInit{.kind = WeightInitKind::Normal, .stddev = 0.05f} : WeightInit{};
  register_module("dense", dense_, std::make_shared<Linear>(c2, options.classes, init_gen, dense_options));
  // pRMSNorm's partial RMS over 12.5% of 10 logits would be the magnitude of
  // logit 0 alone, and 1/|x_0| is unbounded (at the start the loss is ~15 and
  // training stalls); the output layer takes the RMS over all its units.
  NormOptions dense_norm = norm;
  if (dense_norm.kind == NormKind::PRMSNorm && partial_units(options.classes, norm.p) < 4) dense_norm.p = 1.0f;
  register_module("dense_norm", dense_norm_, make_norm(dense_norm, options.classes));
}

Var ConvPoolCnnC::block(const ConvBlock& b, const Var& x) {
  return leaky_relu(b.norm->forward(b.conv->forward(x)), options_.leaky_slope);
}

Var ConvPoolCnnC::forward(const Var& images) {
  check(images.rank() == 4 && images.dim(1) == 3, "ConvPoolCnnC: images must be [N, 3, H, W], got {}",
        images.shape());
  Var x = noise_->forward(images);
  for (int i = 0; i < 3; ++i) x = block(blocks_[i], x);
  x = dropout_->forward(pool_->forward(x));
  for (int i = 3; i < 6; ++i) x = block(blocks_[i], x);
  x = dropout_->forward(pool_->forward(x));
  for (int i = 6; i < 9; ++i) x = block(blocks_[i], x);
  return dense_norm_->forward(dense_->forward(global_pool_->forward(x)));
}

void ConvPoolCnnC::init_weight_norm(const Tensor& images) {
  check(options_.norm.kind == NormKind::WeightNorm, "ConvPoolCnnC::init_weight_norm: the model uses {}, not weightnorm",
        norm_name(options_.norm.kind));
  NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();  // no noise, no dropout: the statistics of the clean signal
  // Each layer is initialised on the output of the layers before it, already
  // initialised, so every layer starts with unit-variance pre-activations.
  auto init_block = [&](const ConvBlock& b, const Var& x) {
    b.conv->init_from_batch(x);
    return block(b, x);
  };
  Var x = constant(images);
  for (int i = 0; i < 3; ++i) x = init_block(blocks_[i], x);
  x = pool_->forward(x);
  for (int i = 3; i < 6; ++i) x = init_block(blocks_[i], x);
  x = pool_->forward(x);
  for (int i = 6; i < 9; ++i) x = init_block(blocks_[i], x);
  dense_->init_from_batch(global_pool_->forward(x));
  train(was_training);
}

std::vector<std::string> ConvPoolCnnC::describe() const {
  std::vector<std::string> lines;
  for (const ConvBlock& b : blocks_)
    lines.push_back(fmt::format("conv {}×{} {}→{}{}", b.kernel, b.kernel, b.in, b.out, b.padding > 0 ? ", pad 1" : ""));
  return lines;
}

}  // namespace rg
