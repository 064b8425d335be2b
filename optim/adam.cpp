#include "rmsgrad/optim/adam.h"

#include <cmath>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

void check_beta(double beta, const char* which, size_t group) {
  check(beta >= 0.0 && beta < 1.0, "adam: group {}: {} must be in [0, 1), got {}", group, which, beta);
}

void check_options(const AdamOptions& o, size_t group) {
  check(std::isfinite(o.lr) && o.lr >= 0.0, "adam: group {}: lr must be finite and >= 0, got {}", group, o.lr);
  check_beta(o.beta1, "beta1", group);
  check_beta(o.beta2, "beta2", group);
  check(std::isfinite(o.eps) && o.eps >= 0.0, "adam: group {}: eps must be finite and >= 0, got {}", group, o.eps);
  check(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0,
        "adam: group {}: weight_decay must be finite and >= 0, got {}", group, o.weight_decay);
}

// The per-step scalars of one parameter, in float32 for the element loop.
struct AdamScalars {
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float l2;            // λ for WeightDecay::L2, else 0
  float shrink;        // 1 − lr·λ for WeightDecay::Decoupled, else 1
  float step_size;     // lr / (1 − β1^t), or lr
  float sqrt_bias_v;   // √(1 − β2^t), or 1
  float eps;
  float gradient_scale;  // Optimizer::step's: a clip's factor, or 1
};

AdamScalars scalars_for(const AdamOptions& o, int64_t t, float gradient_scale) {

  const double t_d = static_cast<double>(t);
  const double bias_m = o.bias_correction ? 1.0 - std::pow(o.beta1, t_d) : 1.0;
  const double bias_v = o.bias_correction ? 1.0 - std::pow(o.beta2, t_d) : 1.0;
  const bool decoupled = o.decay == WeightDecay::Decoupled;
  return AdamScalars{
      .beta1 = static_cast<float>(o.beta1),
      .one_minus_beta1 = static_cast<float>(1.0 - o.beta1),
      .beta2 = static_cast<float>(o.beta2),
      .one_minus_beta2 = static_cast<float>(1.0 - o.beta2),
      .l2 = decoupled ? 0.0f : static_cast<float>(o.weight_decay),
      .shrink = decoupled ? static_cast<float>(1.0 - o.lr * o.weight_decay) : 1.0f,
      .step_size = static_cast<float>(o.lr / bias_m),
      .sqrt_bias_v = static_cast<float>(std::sqrt(bias_v)),
      .eps = static_cast<float>(o.eps),
      .gradient_scale = gradient_scale,
  };
}

// One fused pass: p, m, v updated in place from g.  p, g, m, v: [n]
void adam_update_kernel(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars& s) {
  // A few flops, a square root and a division per element.
  parallel_for(n, kGrainHeavy, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      // g·s is rounded as a clip would have rounded it into the gradient
      // (exactly so without L2 decay: then s.l2·p is 0).
      const float grad = g[i] * s.gradient_scale + s.l2 * p[i];
      const float mi = s.beta1 * m[i] + s.one_minus_beta1 * grad;
      const float vi = s.beta2 * v[i] + s.one_minus_beta2 * grad * grad;
      m[i] = mi;
      v[i] = vi;
      p[i] = p[i] * s.shrink - s.step_size * (mi / (std::sqrt(vi) / s.sqrt_bias_v + s.eps));
    }
  });
}

}  // namespace

Adam::Adam(const NamedParameters& parameters, const AdamOptions& options) : Adam() {
  add_group(parameters, options);
}

size_t Adam::add_group(const NamedParameters& parameters, const AdamOptions& options) {
  check_options(options, group_count());
  return add_group_with(parameters, options, {"m", "v"});
}

void Adam::set_beta1(double beta1) {
  for (size_t g = 0; g < group_count(); ++g) set_beta1(g, beta1);
}

void Adam::set_beta1(size_t group, double beta1) {
  check_group(group, "set_beta1");
  check_beta(beta1, "beta1", group);
  options_[group].beta1 = beta1;
}

void Adam::update(size_t group, ParameterSlot& slot) {
  const AdamScalars s = scalars_for(options_[group], slot.updates(), gradient_scale());
  Tensor& p = slot.var.value();
  adam_update_kernel(p.data(), slot.var.grad().data(), slot.buffers[0].data(), slot.buffers[1].data(), p.numel(),
                     s);
}

}  // namespace rg
