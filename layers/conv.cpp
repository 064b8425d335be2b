#include "rmsgrad/layers/conv.h"

#include <cmath>

#include "rmsgrad/autograd/conv.h"
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/autograd/pooling.h"
#include "rmsgrad/autograd/weight_norm.h"
#include "rmsgrad/core/error.h"

namespace rg {

namespace {

// What Conv2d and Conv1d ask of their sizes; `layer` begins the message.
void check_sizes(const char* layer, int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride,
                 int64_t padding) {
  check(in_channels > 0 && out_channels > 0 && kernel > 0,
        "{}: channels and kernel must be positive, got in {} out {} kernel {}", layer, in_channels, out_channels,
        kernel);
  check(stride >= 1 && padding >= 0, "{}: stride must be ≥ 1 and padding ≥ 0, got {} and {}", layer, stride, padding);
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Generator& gen,
               const Conv2dOptions& options)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_(kernel), options_(options) {
  check_sizes("Conv2d", in_channels, out_channels, kernel, options.stride, options.padding);
  register_weight(make_weight(Shape{out_channels, in_channels, kernel, kernel}, options.init, gen),
                  options.weight_norm);
  if (options.bias) bias = register_parameter("bias", Tensor::zeros(Shape{out_channels}));
}

Var Conv2d::forward(const Var& x) {
  check(x.defined(), "Conv2d: undefined input");
  check(x.rank() == 4 && x.dim(1) == in_channels_, "Conv2d({} → {}, {}×{}): input must be [N, {}, H, W], got {}",
        in_channels_, out_channels_, kernel_, kernel_, in_channels_, x.shape());
  return conv2d(x, effective_weight(), bias, options_.stride, options_.padding);
}

void Conv2d::init_from_batch(const Var& x) {
  check(has_weight_norm(), "Conv2d::init_from_batch: needs weight_norm (the layer has a plain weight)");
  check(x.defined() && x.rank() == 4 && x.dim(1) == in_channels_,
        "Conv2d::init_from_batch: input must be [N, {}, H, W], got {}", in_channels_,
        x.defined() ? x.shape() : Shape{});
  NoGradGuard no_grad;
  // t = conv2d(x, v̂): the weight-normed convolution with every g_o = 1.
  Var t = conv2d(x, weight_norm(weight_v, constant(Tensor::ones(Shape{out_channels_}))), Var(), options_.stride,
                 options_.padding);
  const int64_t n = t.dim(0), per = t.dim(2) * t.dim(3);
  check(n * per > 0, "Conv2d::init_from_batch: the batch {} gives an empty output", x.shape());
  init_from_output(t.value(), n, per);  // t [N, O, Ho·Wo]
}

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel, Generator& gen,
               const Conv1dOptions& options)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_(kernel), options_(options) {
  check_sizes("Conv1d", in_channels, out_channels, kernel, options.stride, options.padding);
  register_weight(make_weight(Shape{out_channels, in_channels, kernel}, options.init, gen), options.weight_norm);
  if (options.bias) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(in_channels * kernel));
    bias = register_parameter("bias", uniform(Shape{out_channels}, -bound, bound, gen));
  }
}

Var Conv1d::forward(const Var& x) {
  check(x.defined(), "Conv1d: undefined input");
  check(x.rank() == 3 && x.dim(1) == in_channels_, "Conv1d({} → {}, {}): input must be [N, {}, L], got {}",
        in_channels_, out_channels_, kernel_, in_channels_, x.shape());
  return conv1d(x, effective_weight(), bias, options_.stride, options_.padding);
}

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride) : kernel_(kernel), stride_(stride) {
  check(kernel >= 1 && stride >= 1, "MaxPool2d: kernel and stride must be ≥ 1, got {} and {}", kernel, stride);
}

Var MaxPool2d::forward(const Var& x) { return max_pool2d(x, kernel_, stride_); }

AvgPool2d::AvgPool2d(int64_t kernel, int64_t stride, int64_t padding)
    : kernel_(kernel), stride_(stride), padding_(padding) {
  check(kernel >= 1 && stride >= 1, "AvgPool2d: kernel and stride must be ≥ 1, got {} and {}", kernel, stride);
  check(padding >= 0 && 2 * padding <= kernel, "AvgPool2d: padding must be in [0, kernel/2], got {} for kernel {}",
        padding, kernel);
}

Var AvgPool2d::forward(const Var& x) { return avg_pool2d(x, kernel_, stride_, padding_); }

Var GlobalAvgPool::forward(const Var& x) { return global_avg_pool(x); }

}  // namespace rg
