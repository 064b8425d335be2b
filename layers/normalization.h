#pragma once
// Every normalization of the paper behind one selector.
//
//   auto norm = make_norm(options, 1024);            // rows of 1024 features
//   auto norm = make_norm(options, 96, NormLayout::Channels);  // conv maps [N, 96, H, W]
//   Var y = norm->forward(x);
//
// kind            what forward does                                  parameters
// none            y = x                                              —
// layernorm       (x − μ)/sqrt(σ² + ε) · g + b                       gain, bias
// rmsnorm         x / sqrt(mean(x²) + ε) · g (+ b)                   gain (, bias)
// prmsnorm        as rmsnorm, mean(x²) over the first k = ⌊n·p⌋ units (k ≥ 1)
// l2norm          x / sqrt(Σ x² + ε) · g (+ b)                       gain (, bias)
// batchnorm       per unit/channel over the batch, running stats     gain, bias; buffers
// weightnorm      y = x here: it reparameterises the preceding weight (see Linear, Conv2d)
//
// Each norm with an activation exists twice (NormOptions::impl): fused, one
// forward and one backward kernel (autograd/norm_ops.h, batch_norm.h), and
// composed from the ordinary ops as the paper's frameworks wrote it
// (autograd/composed_norm_ops.h). Both compute the same function.
//
// pRMSNorm's k: the official code takes int(n·p) (floor), the paper writes
// ⌈n·p⌉; we take the floor, as the code that produced the results did, and
// never let k drop below 1. With n = 1024 and p = 6.25% that is k = 64.
// Gains start at 1, biases at 0.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rmsgrad/autograd/batch_norm.h"
#include "rmsgrad/autograd/norm_ops.h"
#include "rmsgrad/layers/module.h"

namespace rg {

enum class NormKind { None, LayerNorm, RMSNorm, PRMSNorm, L2Norm, BatchNorm, WeightNorm };

NormKind parse_norm_kind(std::string_view name);  // throws, listing the valid names
std::string norm_name(NormKind kind);
inline constexpr std::string_view kNormNames = "none|layernorm|rmsnorm|prmsnorm|l2norm|batchnorm|weightnorm";

enum class NormImpl { Fused, Composed };
NormImpl parse_norm_impl(std::string_view name);  // "fused" or "composed"; throws otherwise
std::string norm_impl_name(NormImpl impl);

class Norm;

struct NormOptions {
  NormKind kind = NormKind::None;
  float p = 0.0625f;        // pRMSNorm's fraction of units
  float eps = 1e-5f;
  bool eps_inside = true;   // RMSNorm/pRMSNorm: ε inside the square root
  bool rms_bias = false;    // RMSNorm family: add a bias after the gain
  float momentum = 0.1f;    // BatchNorm's running statistics
  StatisticsSum batch_norm_sum = {};  // BatchNorm: statistics summed over processes (autograd/batch_norm.h)
  NormImpl impl = NormImpl::Fused;  // one fused kernel, or composed from ops
  float preact_shift = 0.0f;        // a learnable input offset starting here (0: none); see Norm
  // A norm of one's own: when set, make_norm returns factory(features,
  // layout) instead of a norm of `kind` (the rest of these options are the
  // factory's to read or not), so every provided model builds it in place of
  // the paper's norms:
  //   LlamaOptions options{.norm = {.factory = [](int64_t n, NormLayout) { return std::make_shared<MyNorm>(n); }}};
  std::function<std::shared_ptr<Norm>(int64_t features, NormLayout layout)> factory = {};

  bool normalizes() const { return factory != nullptr || kind != NormKind::None; }
};

// pRMSNorm's partial size for a row of n units.
int64_t partial_units(int64_t n, float p);

// A norm's forward is normalize(x), or normalize(x + offset) when the norm
// was given a pre-activation shift (NormOptions::preact_shift, --preact-shift
// C): a learnable offset per unit (per channel for conv maps) that starts at
// C, so that the inputs of every normalized place start centred on C instead
// of 0. LayerNorm removes any such offset; RMSNorm does not (the question the
// paper left open: is re-centering dispensable only because inputs usually
// start centred?). With C = 0 no offset exists and nothing changes.
class Norm : public Layer {
 public:
  Var forward(const Var& x) override;
  void add_preact_shift(float shift, int64_t features, NormLayout layout);
  // What a fused recurrent cell needs to run this norm inside its own kernel
  // (autograd/norm_ops.h's RowNorm), or nothing where it cannot: a composed or
  // channel-layout norm, one with an offset, BatchNorm, a norm of one's own
  // (a subclass of LayerNorm, RMSNorm or Identity too, unless it overrides
  // this). The cells then call forward() and take the composed route.
  virtual std::optional<RowNorm> row_norm() const { return std::nullopt; }
  Var offset;  // undefined unless add_preact_shift

 protected:
  virtual Var normalize(const Var& x) = 0;

 private:
  NormLayout offset_layout_ = NormLayout::Features;
};

class Identity : public Norm {
 public:
  std::optional<RowNorm> row_norm() const override;

 protected:
  Var normalize(const Var& x) override { return x; }
};

class LayerNorm : public Norm {
 public:
  LayerNorm(int64_t features, float eps = 1e-5f, NormLayout layout = NormLayout::Features,
            NormImpl impl = NormImpl::Fused);
  Var gain, bias;
  std::optional<RowNorm> row_norm() const override;

 protected:
  Var normalize(const Var& x) override;

 private:
  float eps_;
  NormLayout layout_;
  NormImpl impl_;
};

// RMSNorm, pRMSNorm (p < 1) and L2-Norm (config.l2) share one fused kernel.
// The partial size k = partial_units(row length, p) is fixed at forward time,
// because a conv map's row length H·W is known only then.
class RMSNorm : public Norm {
 public:
  RMSNorm(int64_t features, const RmsNormConfig& config, float p = 1.0f, bool use_bias = false,
          NormLayout layout = NormLayout::Features, NormImpl impl = NormImpl::Fused);
  Var gain, bias;  // bias undefined unless use_bias
  std::optional<RowNorm> row_norm() const override;

 protected:
  Var normalize(const Var& x) override;

 private:
  RmsNormConfig config_;
  float p_;
  NormLayout layout_;
  NormImpl impl_;
};

class BatchNorm : public Norm {
 public:
  BatchNorm(int64_t channels, float eps = 1e-5f, float momentum = 0.1f, NormImpl impl = NormImpl::Fused);
  Var gain, bias;
  BatchNormState state;

 protected:
  Var normalize(const Var& x) override;  // x [N, C] or [N, C, H, W]

 private:
  NormImpl impl_;
};

// GroupNorm (Wu & He 2018) as torch.nn.GroupNorm: x [N, C, *], the C channels
// in `num_groups` groups, each sample's group normalized over its channels and
// positions (autograd/norm_ops.h: group_norm). With affine, a per-channel
// "weight" (starting at 1) and "bias" (at 0), torch's names; without, no
// parameters. A plain layer: not one of the NormKind choices above.
class GroupNorm : public Layer {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, float eps = 1e-5f, bool affine = true);
  Var forward(const Var& x) override;
  int64_t num_groups() const { return groups_; }
  int64_t num_channels() const { return channels_; }
  Var weight, bias;  // [C]; undefined without affine

 private:
  int64_t groups_, channels_;
  float eps_;
};

// The factory every model uses. `features` is n for the feature layout and C
// for the channel layout.
std::shared_ptr<Norm> make_norm(const NormOptions& options, int64_t features,
                                NormLayout layout = NormLayout::Features);

}  // namespace rg
