// Losses. The elementwise ones compare an input x with a target t of the same
// shape, element by element, on d = x − t; both get gradients, ∂ℓ/∂t = −∂ℓ/∂x:
//
//   mse    ℓ = d²                                     ∂ℓ/∂x = 2d
//   l1     ℓ = |d|                                    ∂ℓ/∂x = sign d   (0 at d = 0)
//   huber  ℓ = d²/2 where |d| < δ, else δ(|d| − δ/2)  ∂ℓ/∂x = clamp(d, −δ, δ)
//
// Binary cross-entropy from a logit x, with target t and positive weight p.
// With softplus(z) = log(1 + eᶻ), −log σ(x) = softplus(−x) and
// −log(1 − σ(x)) = softplus(x), so
//
//   bce    ℓ = p·t·softplus(−x) + (1 − t)·softplus(x)
//          ∂ℓ/∂x = (1 − t)·σ(x) − p·t·σ(−x)           (σ(x) − t when p = 1)
//          ∂ℓ/∂t = p·softplus(−x) − softplus(x)       (−x when p = 1)
//
// Both terms of ℓ are ≥ 0 for t in [0, 1], so nothing cancels, and softplus is
// evaluated as max(z, 0) + log1p(e^−|z|), which cannot overflow.
//
// Negative log-likelihood of log-probabilities x [N, C, inner] (inner = d1·…,
// 1 for [N, C]) and targets t [N, inner]:
//
//   nll    ℓ[n, j] = −x[n, t[n, j], j]                ∂ℓ[n, j]/∂x[n, t[n, j], j] = −1
//
// with ℓ = 0 (and no gradient) where t is ignore_index.
//
// Reduction None returns the ℓ themselves, Sum their sum (in double) and Mean
// the sum over the number of elements (for nll, of targets not ignored). The
// backward scales each ℓ' by its gradient: g_i, g, or g / count. Nothing is
// saved besides pos_weight: the backward reads the inputs' values.
#include <algorithm>
#include <cmath>
#include <vector>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/broadcast.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

float softplus_of(float z) { return std::max(z, 0.0f) + std::log1p(std::exp(-std::fabs(z))); }
float sigmoid_of(float z) { return 1.0f / (1.0f + std::exp(-z)); }

// pos_weight broadcast to every element, or 1 when there is none.
struct PosWeight {
  Tensor p;
  float operator()(int64_t i) const { return p.defined() ? p.data()[i] : 1.0f; }
};

// The loss over ℓ [shape]: ℓ itself, or the scalar Σℓ·norm.
Tensor reduce_losses(Tensor losses, Reduction reduction, float norm) {
  if (reduction == Reduction::None) return losses;
  double total = 0.0;
  for (float l : losses.span()) total += l;
  return Tensor::scalar(static_cast<float>(total * norm));
}

// The gradient arriving at element i: g_i for None, g·norm otherwise.
struct LossGrad {
  const float* g;
  bool each;
  float scale;
  float operator[](int64_t i) const { return each ? g[i] : scale; }
};
LossGrad loss_grad(const Node& n, Reduction reduction, float norm) {
  const float* g = n.grad.data();
  return {g, reduction == Reduction::None, reduction == Reduction::None ? 0.0f : g[0] * norm};
}

// ℓ_i = f(x_i, t_i, i), ∂ℓ_i/∂x_i = dx(x_i, t_i, i), ∂ℓ_i/∂t_i = dt(x_i, t_i, i).
template <class F, class Dx, class Dt>
Var pointwise_loss(const char* op, const Var& input, const Var& target, Reduction reduction, F f, Dx dx, Dt dt) {
  check(input.defined() && target.defined(), "{}: undefined input or target", op);
  check(input.shape() == target.shape(), "{}: input {} and target {} must have the same shape", op, input.shape(),
        target.shape());
  const int64_t n = input.numel();
  check(reduction != Reduction::Mean || n > 0, "{}: the mean of an empty input {}", op, input.shape());
  const float norm = reduction == Reduction::Mean ? 1.0f / static_cast<float>(n) : 1.0f;
  Tensor losses = Tensor::empty(input.shape());
  const float *x = input.value().data(), *t = target.value().data();
  float* l = losses.data();
  parallel_for(n, kGrainHeavy, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) l[i] = f(x[i], t[i], i);
  });
  return tape().record(op, reduce_losses(std::move(losses), reduction, norm), {input, target},
                       [reduction, norm, dx, dt](Node& node) {
                         Tensor* gx = node.input_grad(0);
                         Tensor* gt = node.input_grad(1);
                         const LossGrad g = loss_grad(node, reduction, norm);
                         const float* x = node.inputs[0]->value.data();
                         const float* t = node.inputs[1]->value.data();
                         float* px = gx ? gx->data() : nullptr;
                         float* pt = gt ? gt->data() : nullptr;
                         parallel_for(node.inputs[0]->value.numel(), kGrainHeavy, [&](int64_t lo, int64_t hi) {
                           for (int64_t i = lo; i < hi; ++i) {
                             if (px) px[i] += g[i] * dx(x[i], t[i], i);
                             if (pt) pt[i] += g[i] * dt(x[i], t[i], i);
                           }
                         });
                       });
}

}  // namespace

Var mse_loss(const Var& input, const Var& target, Reduction reduction) {
  return pointwise_loss(
      "mse_loss", input, target, reduction, [](float x, float t, int64_t) { return (x - t) * (x - t); },
      [](float x, float t, int64_t) { return 2.0f * (x - t); },
      [](float x, float t, int64_t) { return 2.0f * (t - x); });
}

Var l1_loss(const Var& input, const Var& target, Reduction reduction) {
  auto sign = [](float d) { return d > 0 ? 1.0f : (d < 0 ? -1.0f : 0.0f); };
  return pointwise_loss(
      "l1_loss", input, target, reduction, [](float x, float t, int64_t) { return std::fabs(x - t); },
      [sign](float x, float t, int64_t) { return sign(x - t); },
      [sign](float x, float t, int64_t) { return sign(t - x); });
}

Var huber_loss(const Var& input, const Var& target, float delta, Reduction reduction) {
  check(delta > 0.0f, "huber_loss: delta must be positive, got {}", delta);
  auto slope = [delta](float d) { return std::min(std::max(d, -delta), delta); };
  return pointwise_loss(
      "huber_loss", input, target, reduction,
      [delta](float x, float t, int64_t) {
        const float a = std::fabs(x - t);
        return a < delta ? 0.5f * a * a : delta * (a - 0.5f * delta);
      },
      [slope](float x, float t, int64_t) { return slope(x - t); },
      [slope](float x, float t, int64_t) { return -slope(x - t); });
}

Var binary_cross_entropy_with_logits(const Var& logits, const Var& targets, Reduction reduction,
                                     const Tensor& pos_weight) {
  const char* op = "binary_cross_entropy_with_logits";
  check(logits.defined(), "{}: undefined logits", op);
  // p for every element: pos_weight broadcast to the logits' shape, or none (p = 1).
  Tensor p;
  if (pos_weight.defined()) {
    const Shape& ps = pos_weight.shape();
    bool fits = ps.rank() <= logits.rank();  // trailing axes alike, or 1 in pos_weight
    for (int i = 1; fits && i <= ps.rank(); ++i) fits = ps[-i] == 1 || ps[-i] == logits.shape()[-i];
    check(fits, "{}: pos_weight {} does not broadcast to the logits' shape {}", op, ps, logits.shape());
    p = Tensor::empty(logits.shape());
    broadcast_binary(pos_weight, logits.value(), p, [](float w, float) { return w; });
  }
  const PosWeight weight{p};  // copied into the lambdas, which keeps p for the backward
  return pointwise_loss(
      op, logits, targets, reduction,
      [weight](float x, float t, int64_t i) { return weight(i) * t * softplus_of(-x) + (1.0f - t) * softplus_of(x); },
      [weight](float x, float t, int64_t i) { return (1.0f - t) * sigmoid_of(x) - weight(i) * t * sigmoid_of(-x); },
      [weight](float x, float, int64_t i) { return weight(i) * softplus_of(-x) - softplus_of(x); });
}

Var nll_loss(const Var& log_probs, const Indices& targets, int32_t ignore_index, Reduction reduction) {
  check(log_probs.defined(), "nll_loss: undefined log_probs");
  check(log_probs.rank() >= 2, "nll_loss: log_probs must be [N, C] or [N, C, d1, ...], got {}", log_probs.shape());
  const Shape position = log_probs.shape().without(1);  // [N, d1, ...]
  check(targets.shape == position, "nll_loss: targets {} must be [N, d1, ...] = {} for log_probs {}", targets.shape,
        position, log_probs.shape());
  const int64_t classes = log_probs.dim(1), inner = log_probs.shape().inner(1), count = position.numel();
  int64_t kept = 0;
  for (int64_t k = 0; k < count; ++k) {
    const int32_t t = targets.values[k];
    check(t == ignore_index || (t >= 0 && t < classes), "nll_loss: target {} at position {} is out of range [0, {})",
          t, k, classes);
    kept += t != ignore_index;
  }
  // Every target ignored: the mean is 0, as cross_entropy's (torch gives NaN).
  const float norm = reduction == Reduction::Mean ? (kept > 0 ? 1.0f / static_cast<float>(kept) : 0.0f) : 1.0f;
  // Position k = (n, j) picks element (n·C + t)·inner + j of x.
  auto picked = [classes, inner](int64_t k, int32_t t) { return ((k / inner) * classes + t) * inner + k % inner; };
  Tensor losses = Tensor::empty(position);
  const float* x = log_probs.value().data();
  float* l = losses.data();
  for (int64_t k = 0; k < count; ++k) {
    const int32_t t = targets.values[k];
    l[k] = t == ignore_index ? 0.0f : -x[picked(k, t)];
  }
  return tape().record("nll_loss", reduce_losses(std::move(losses), reduction, norm), {log_probs},
                       [values = targets.values, ignore_index, reduction, norm, picked](Node& n) {
                         Tensor* dx = n.input_grad(0);
                         if (!dx) return;
                         const LossGrad g = loss_grad(n, reduction, norm);
                         float* d = dx->data();
                         for (size_t k = 0; k < values.size(); ++k)
                           if (values[k] != ignore_index) d[picked(static_cast<int64_t>(k), values[k])] -= g[k];
                       });
}

}  // namespace rg
