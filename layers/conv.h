#pragma once
// Conv2d and Conv1d (optionally weight-normalized) and the pooling modules.
//
//   y = conv2d(x, W, b)      x [N, C, H, W], W [O, C, k, k] (PyTorch's layout), b [O]
//   y = conv1d(x, W, b)      x [N, C, L],    W [O, C, k],                        b [O]
//
// With weight_norm on, W_o = g_o · v_o / ‖v_o‖ for each output channel o, the
// norm taken over the whole filter [C, k, k] or [C, k] (Salimans & Kingma 2016;
// layers/weighted_layer.h keeps W either way). v starts from options.init and g from
// ‖v_o‖, so W starts where the plain layer would. init_from_batch (Conv2d
// only) is the data-dependent init of Salimans' CIFAR code, per output CHANNEL:
//
//   t = conv2d(x, v̂)         v̂_o = v_o / ‖v_o‖, no bias
//   μ_o, σ_o² = mean and (biased) variance of t[:, o] over N × Ho × Wo
//   g_o ← 1 / sqrt(σ_o² + 1e-10),   b_o ← −μ_o · g_o
//
// Parameter names: "weight", "bias"; with weight norm "weight_v", "weight_g"
// ([O]) and "bias".
//
// Initial values. Conv2d: W from options.init (Xavier by default), b = 0.
// Conv1d starts as torch.nn.Conv1d does: W from kaiming_uniform_(a = √5),
// which is U(±1/√fan_in) (WeightInitKind::FanInUniform, the default of its
// options.init), and b ~ U(±1/√fan_in), fan_in = C·k.
#include <cstdint>

#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/init.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/weighted_layer.h"

namespace rg {

struct Conv2dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  bool bias = true;         // b starts at 0
  bool weight_norm = false;
  WeightInit init = {};     // of W, or of v under weight norm
};

class Conv2d : public WeightedLayer {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Generator& gen = default_generator(),
         const Conv2dOptions& options = {});
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, const Conv2dOptions& options)
      : Conv2d(in_channels, out_channels, kernel, default_generator(), options) {}

  Var forward(const Var& x) override;  // [N, C, H, W] → [N, O, Ho, Wo]

  // Salimans & Kingma's data-dependent init from a batch (see above). Needs
  // weight_norm; records nothing on the tape.
  void init_from_batch(const Var& x);

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }

  // weight [O, C, k, k], or weight_v [O, C, k, k] and weight_g [O]; bias [O]
  // (WeightedLayer's members; effective_weight() is W either way).

 private:
  int64_t in_channels_, out_channels_, kernel_;
  Conv2dOptions options_;
};

struct Conv1dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  bool bias = true;         // b ~ U(±1/√fan_in), as torch
  bool weight_norm = false;
  WeightInit init = {WeightInitKind::FanInUniform};  // of W, or of v under weight norm
};

class Conv1d : public WeightedLayer {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel, Generator& gen = default_generator(),
         const Conv1dOptions& options = {});
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel, const Conv1dOptions& options)
      : Conv1d(in_channels, out_channels, kernel, default_generator(), options) {}

  Var forward(const Var& x) override;  // [N, C, L] → [N, O, Lo]

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }

  // weight [O, C, k], or weight_v [O, C, k] and weight_g [O]; bias [O]
  // (WeightedLayer's members; effective_weight() is W either way).

 private:
  int64_t in_channels_, out_channels_, kernel_;
  Conv1dOptions options_;
};

class MaxPool2d : public Layer {
 public:
  MaxPool2d(int64_t kernel, int64_t stride);
  Var forward(const Var& x) override;

 private:
  int64_t kernel_, stride_;
};

// Mean over kernel×kernel windows, as torch.nn.AvgPool2d(kernel, stride,
// padding) with its defaults (zeros of the padding counted; see avg_pool2d).
class AvgPool2d : public Layer {
 public:
  AvgPool2d(int64_t kernel, int64_t stride, int64_t padding = 0);
  Var forward(const Var& x) override;

 private:
  int64_t kernel_, stride_, padding_;
};

// [N, C, H, W] → [N, C], the mean over H×W.
class GlobalAvgPool : public Layer {
 public:
  Var forward(const Var& x) override;
};

}  // namespace rg
