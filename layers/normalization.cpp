#include "rmsgrad/layers/normalization.h"

#include <cmath>
#include <typeinfo>

#include "rmsgrad/autograd/composed_norm_ops.h"
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"

namespace rg {

NormKind parse_norm_kind(std::string_view name) {
  if (name == "none") return NormKind::None;
  if (name == "layernorm") return NormKind::LayerNorm;
  if (name == "rmsnorm") return NormKind::RMSNorm;
  if (name == "prmsnorm") return NormKind::PRMSNorm;
  if (name == "l2norm") return NormKind::L2Norm;
  if (name == "batchnorm") return NormKind::BatchNorm;
  if (name == "weightnorm") return NormKind::WeightNorm;
  throw Error(fmt::format("unknown normalization '{}' (expected one of {})", name, kNormNames));
}

std::string norm_name(NormKind kind) {
  switch (kind) {
    case NormKind::None: return "none";
    case NormKind::LayerNorm: return "layernorm";
    case NormKind::RMSNorm: return "rmsnorm";
    case NormKind::PRMSNorm: return "prmsnorm";
    case NormKind::L2Norm: return "l2norm";
    case NormKind::BatchNorm: return "batchnorm";
    case NormKind::WeightNorm: return "weightnorm";
  }
  return "?";
}

NormImpl parse_norm_impl(std::string_view name) {
  if (name == "fused") return NormImpl::Fused;
  if (name == "composed") return NormImpl::Composed;
  throw Error(fmt::format("unknown normalization implementation '{}' (expected fused or composed)", name));
}

std::string norm_impl_name(NormImpl impl) { return impl == NormImpl::Fused ? "fused" : "composed"; }

int64_t partial_units(int64_t n, float p) {
  check(p > 0.0f && p <= 1.0f, "prmsnorm: p must be in (0, 1], got {}", p);
  return std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(n) * p)));
}

Var Norm::forward(const Var& x) {
  if (!offset.defined()) return normalize(x);
  if (offset_layout_ == NormLayout::Features) return normalize(x + offset);
  check(x.rank() == 4, "preact shift: channel layout needs [N, C, H, W], got {}", x.shape());
  return normalize(x + reshape(offset, {offset.dim(0), 1, 1}));
}

void Norm::add_preact_shift(float shift, int64_t features, NormLayout layout) {
  check(!offset.defined(), "add_preact_shift: the norm already has an offset");
  offset = register_parameter("offset", Tensor::full(Shape{features}, shift));
  offset_layout_ = layout;
}

// Only the classes themselves are known to compute their RowNorm: a subclass
// that overrides normalize() must say for itself whether it can be fused.
std::optional<RowNorm> Identity::row_norm() const {
  if (typeid(*this) != typeid(Identity) || offset.defined()) return std::nullopt;
  return RowNorm{};
}

LayerNorm::LayerNorm(int64_t features, float eps, NormLayout layout, NormImpl impl)
    : eps_(eps), layout_(layout), impl_(impl) {
  gain = register_parameter("gain", Tensor::ones(Shape{features}));
  bias = register_parameter("bias", Tensor::zeros(Shape{features}));
}

Var LayerNorm::normalize(const Var& x) {
  if (impl_ == NormImpl::Composed) return composed_layer_norm(x, gain, bias, eps_, layout_);
  return layer_norm(x, gain, bias, eps_, layout_);
}

std::optional<RowNorm> LayerNorm::row_norm() const {
  if (typeid(*this) != typeid(LayerNorm) || impl_ != NormImpl::Fused || layout_ != NormLayout::Features ||
      offset.defined())
    return std::nullopt;
  RowNorm norm{RowNormKind::Layer, gain, bias};
  norm.config.eps = eps_;
  return norm;
}

RMSNorm::RMSNorm(int64_t features, const RmsNormConfig& config, float p, bool use_bias, NormLayout layout,
                 NormImpl impl)
    : config_(config), p_(p), layout_(layout), impl_(impl) {
  if (p < 1.0f) partial_units(features, p);  // validates p
  gain = register_parameter("gain", Tensor::ones(Shape{features}));
  if (use_bias) bias = register_parameter("bias", Tensor::zeros(Shape{features}));
}

Var RMSNorm::normalize(const Var& x) {
  RmsNormConfig config = config_;
  if (p_ < 1.0f && x.rank() >= 1) {
    const int64_t n = layout_ == NormLayout::Channels && x.rank() == 4 ? x.dim(2) * x.dim(3) : x.dim(-1);
    config.k = partial_units(n, p_);
  }
  if (impl_ == NormImpl::Composed) return composed_rms_norm(x, gain, bias, config, layout_);
  return rms_norm(x, gain, bias, config, layout_);
}

std::optional<RowNorm> RMSNorm::row_norm() const {
  if (typeid(*this) != typeid(RMSNorm) || impl_ != NormImpl::Fused || layout_ != NormLayout::Features ||
      offset.defined())
    return std::nullopt;
  RowNorm norm{RowNormKind::Rms, gain, bias, config_};
  if (p_ < 1.0f) norm.config.k = partial_units(gain.dim(0), p_);
  return norm;
}

BatchNorm::BatchNorm(int64_t channels, float eps, float momentum, NormImpl impl) : impl_(impl) {
  gain = register_parameter("gain", Tensor::ones(Shape{channels}));
  bias = register_parameter("bias", Tensor::zeros(Shape{channels}));
  state.running_mean = register_buffer("running_mean", Tensor::zeros(Shape{channels}));
  state.running_var = register_buffer("running_var", Tensor::ones(Shape{channels}));
  state.eps = eps;
  state.momentum = momentum;
}

Var BatchNorm::normalize(const Var& x) {
  if (impl_ == NormImpl::Composed) return composed_batch_norm(x, gain, bias, state, is_training());
  return batch_norm(x, gain, bias, state, is_training());
}

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, float eps, bool affine)
    : groups_(num_groups), channels_(num_channels), eps_(eps) {
  check(num_groups >= 1 && num_channels >= 1 && num_channels % num_groups == 0,
        "GroupNorm: {} groups must divide the {} channels", num_groups, num_channels);
  check(eps >= 0.0f, "GroupNorm: eps must be non-negative, got {}", eps);
  if (!affine) return;
  weight = register_parameter("weight", Tensor::ones(Shape{num_channels}));
  bias = register_parameter("bias", Tensor::zeros(Shape{num_channels}));
}

Var GroupNorm::forward(const Var& x) {
  check(x.defined(), "GroupNorm: undefined input");
  check(x.rank() >= 2 && x.dim(1) == channels_, "GroupNorm({} groups, {} channels): input must be [N, {}, *], got {}",
        groups_, channels_, channels_, x.shape());
  return group_norm(x, groups_, weight, bias, eps_);
}

namespace {

std::shared_ptr<Norm> make_plain_norm(const NormOptions& o, int64_t features, NormLayout layout) {
  switch (o.kind) {
    case NormKind::None:
    case NormKind::WeightNorm:
      return std::make_shared<Identity>();
    case NormKind::LayerNorm:
      return std::make_shared<LayerNorm>(features, o.eps, layout, o.impl);
    case NormKind::RMSNorm:
    case NormKind::PRMSNorm:
    case NormKind::L2Norm: {
      RmsNormConfig config;
      config.eps = o.eps;
      config.eps_inside = o.eps_inside;
      config.l2 = o.kind == NormKind::L2Norm;
      const float p = o.kind == NormKind::PRMSNorm ? o.p : 1.0f;
      return std::make_shared<RMSNorm>(features, config, p, o.rms_bias, layout, o.impl);
    }
    case NormKind::BatchNorm: {
      check(!o.batch_norm_sum || o.impl == NormImpl::Fused,
            "make_norm: a synchronised BatchNorm (batch_norm_sum) needs the fused kernel, not the composed ops");
      auto norm = std::make_shared<BatchNorm>(features, o.eps, o.momentum, o.impl);
      norm->state.sum = o.batch_norm_sum;
      return norm;
    }
  }
  throw Error("make_norm: unknown kind");
}

}  // namespace

std::shared_ptr<Norm> make_norm(const NormOptions& o, int64_t features, NormLayout layout) {
  if (o.factory) {
    std::shared_ptr<Norm> own = o.factory(features, layout);
    check(own != nullptr, "make_norm: the norm factory returned nothing for {} features", features);
    return own;
  }
  check(features > 0, "make_norm: {} needs a positive size, got {}", norm_name(o.kind), features);
  check(std::isfinite(o.preact_shift), "make_norm: the pre-activation shift must be finite, got {}", o.preact_shift);
  std::shared_ptr<Norm> norm = make_plain_norm(o, features, layout);
  if (o.preact_shift != 0.0f) norm->add_preact_shift(o.preact_shift, features, layout);
  return norm;
}

}  // namespace rg
