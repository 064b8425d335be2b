#include "rmsgrad/layers/linear.h"

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/autograd/weight_norm.h"
#include "rmsgrad/core/error.h"

namespace rg {

Var linear(const Var& x, const Var& weight, const Var& bias) {
  check(x.defined() && weight.defined(), "linear: undefined input or weight");
  check(weight.rank() == 2, "linear: weight must be [out, in], got {}", weight.shape());
  check(x.rank() >= 1 && x.dim(-1) == weight.dim(1), "linear: input {} must end in in_features = {} (weight {})",
        x.shape(), weight.dim(1), weight.shape());
  if (bias.defined())  // check() evaluates its arguments, so bias.shape() only when there is a bias
    check(bias.shape() == Shape{weight.dim(0)}, "linear: bias {} must be [{}] for weight {}", bias.shape(),
          weight.dim(0), weight.shape());
  if (bias.defined() && x.rank() >= 2) return affine(x, weight, bias);  // one node: x·Wᵀ + b
  // A 1-D x is one row: [in] → [1, in] → [1, out] → [out].
  const bool vector = x.rank() == 1;
  Var rows = vector ? reshape(x, {1, x.dim(0)}) : x;
  Var y = matmul(rows, weight, false, true);  // [..., in] · [out, in]ᵀ → [..., out]
  if (vector) y = reshape(y, {weight.dim(0)});
  return bias.defined() ? y + bias : y;
}

Linear::Linear(int64_t in_features, int64_t out_features, Generator& gen, const LinearOptions& options)
    : in_features_(in_features), out_features_(out_features) {
  check(in_features > 0 && out_features > 0, "Linear: sizes must be positive, got in {} out {}", in_features,
        out_features);
  register_weight(make_weight(Shape{out_features, in_features}, options.init, gen), options.weight_norm);
  if (options.bias) bias = register_parameter("bias", Tensor::zeros(Shape{out_features}));
}

Var Linear::forward(const Var& x) {
  check(x.defined(), "Linear: undefined input");
  check(x.rank() >= 1 && x.dim(-1) == in_features_, "Linear({} → {}): input {} must end in {}", in_features_,
        out_features_, x.shape(), in_features_);
  return linear(x, effective_weight(), bias);
}

void Linear::init_from_batch(const Var& x) {
  check(has_weight_norm(), "Linear::init_from_batch: needs weight_norm (the layer has a plain weight)");
  check(x.defined() && x.rank() >= 1 && x.dim(-1) == in_features_,
        "Linear({} → {})::init_from_batch: input {} must end in {}", in_features_, out_features_,
        x.defined() ? x.shape() : Shape{}, in_features_);
  NoGradGuard no_grad;
  // t = x v̂ᵀ: the weight-normed product with every g_i = 1.
  Var t = linear(x, weight_norm(weight_v, constant(Tensor::ones(Shape{out_features_}))), Var());
  const int64_t rows = t.numel() / out_features_;
  check(rows > 0, "Linear::init_from_batch: the batch {} is empty", x.shape());
  init_from_output(t.value(), rows, 1);  // t [rows, out]
}

}  // namespace rg
