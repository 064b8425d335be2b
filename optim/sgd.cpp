#include "rmsgrad/optim/sgd.h"

#include <cmath>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

void check_options(const SgdOptions& o, size_t group) {
  check(std::isfinite(o.lr) && o.lr >= 0.0, "sgd: group {}: lr must be finite and >= 0, got {}", group, o.lr);
  check(std::isfinite(o.momentum) && o.momentum >= 0.0, "sgd: group {}: momentum must be finite and >= 0, got {}",
        group, o.momentum);
  check(std::isfinite(o.dampening), "sgd: group {}: dampening must be finite, got {}", group, o.dampening);
  check(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0,
        "sgd: group {}: weight_decay must be finite and >= 0, got {}", group, o.weight_decay);
  check(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0),
        "sgd: group {}: nesterov needs momentum > 0 and dampening 0, got momentum {} and dampening {}", group,
        o.momentum, o.dampening);
}

// Without momentum; the gradient taken times `scale` (Optimizer::step's).  p, g: [n]
void sgd_kernel(float* p, const float* g, int64_t n, float lr, float weight_decay, float scale) {
  parallel_for(n, kGrainElementwise, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) p[i] -= lr * (g[i] * scale + weight_decay * p[i]);
  });
}

struct MomentumScalars {
  float lr, weight_decay, momentum, one_minus_dampening;
  float gradient_scale;  // Optimizer::step's: a clip's factor, or 1
  bool first;  // the parameter's first update: b ← d
  bool nesterov;
};

// With momentum.  p, g, b: [n]
void sgd_momentum_kernel(float* p, const float* g, float* b, int64_t n, const MomentumScalars& s) {
  parallel_for(n, kGrainElementwise, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float d = g[i] * s.gradient_scale + s.weight_decay * p[i];
      const float bi = s.first ? d : s.momentum * b[i] + s.one_minus_dampening * d;
      b[i] = bi;
      p[i] -= s.lr * (s.nesterov ? d + s.momentum * bi : bi);
    }
  });
}

}  // namespace

Sgd::Sgd(const NamedParameters& parameters, const SgdOptions& options) : Sgd() { add_group(parameters, options); }

size_t Sgd::add_group(const NamedParameters& parameters, const SgdOptions& options) {
  check_options(options, group_count());
  std::vector<std::string> buffers;
  if (options.momentum != 0.0) buffers.push_back("momentum");
  return add_group_with(parameters, options, std::move(buffers));
}

void Sgd::update(size_t group, ParameterSlot& slot) {
  const SgdOptions& o = options_[group];
  Tensor& p = slot.var.value();
  const float* g = slot.var.grad().data();
  if (o.momentum == 0.0) {
    sgd_kernel(p.data(), g, p.numel(), static_cast<float>(o.lr), static_cast<float>(o.weight_decay),
               gradient_scale());
    return;
  }
  const MomentumScalars s{
      .lr = static_cast<float>(o.lr),
      .weight_decay = static_cast<float>(o.weight_decay),
      .momentum = static_cast<float>(o.momentum),
      .one_minus_dampening = static_cast<float>(1.0 - o.dampening),
      .gradient_scale = gradient_scale(),
      .first = slot.updates() == 1,
      .nesterov = o.nesterov,
  };
  sgd_momentum_kernel(p.data(), g, slot.buffers[0].data(), p.numel(), s);
}

}  // namespace rg
