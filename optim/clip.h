#pragma once
// Gradient clipping, in place, between backward() and the optimizer's step().
//
// By global norm (torch.nn.utils.clip_grad_norm_, norm_type 2): with
//   N = √(Σ over every parameter's gradient of Σ g²)          (in double)
//   c = max_norm / (N + 1e-6)
// every gradient is multiplied by c when c < 1 and left alone otherwise. The
// 1e-6 keeps c finite for a zero gradient; it also makes a gradient whose norm
// is exactly max_norm shrink by a factor 1 − 1e-6/max_norm, as in torch.
//
// By parameter: the same rule applied to each parameter's gradient on its own,
// with its own norm N_p: g_p ← g_p·c_p, c_p = max_norm / (N_p + 1e-6) when
// c_p < 1. This is how the order-embedding code bounds each weight matrix's
// step separately; one large gradient no longer shrinks all the others.
//
// Both skip parameters without a gradient (as torch skips .grad None) and
// return the norms BEFORE clipping, for logging. A non-finite norm (an inf or
// NaN gradient) is returned as is and its gradients are left untouched, so the
// caller can see it and skip the step (torch would multiply them by 0 or NaN).
//
// By value (torch.nn.utils.clip_grad_value_): every gradient element is
// clamped to [−clip_value, clip_value], elementwise, each parameter on its own
// and the directions changed. Parameters without a gradient are skipped.
// Non-finite elements go as in torch's clamp: ±inf becomes ±clip_value and a
// NaN stays NaN (so a NaN can still be found by first_nonfinite_gradient).
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/optim/optimizer.h"

namespace rg {

// The L2 norm of one tensor, accumulated in double.
double l2_norm(const Tensor& t);

// The global L2 norm of every gradient (parameters without one skipped).
double grad_norm(const NamedParameters& parameters);

// The first parameter (in order) whose gradient holds a NaN or an infinity,
// as "<name> (NaN)" or "<name> (Inf)"; empty when every gradient is finite.
// For naming the culprit once a norm has come out non-finite.
std::string first_nonfinite_gradient(const NamedParameters& parameters);

// Clips by the global norm; returns the norm before clipping.
double clip_grad_norm(const NamedParameters& parameters, double max_norm);

// The same clip without the pass that multiplies every gradient: the global
// norm N and the factor c clip_grad_norm would multiply by (1 when it would
// leave the gradients alone: c ≥ 1, or N not finite). The optimizer then
// applies c in its own pass,
//
//   const GlobalClip clip = global_clip(model.named_parameters(), 1.0);
//   optimizer.step(clip.scale);     // as clip_grad_norm(...); optimizer.step();
//
// giving the same parameters bit for bit (without L2 weight decay; with it,
// within one rounding). The gradients keep their unclipped values.
struct GlobalClip {
  double norm = 0.0;
  float scale = 1.0f;
};
GlobalClip global_clip(const NamedParameters& parameters, double max_norm);

// Clamps every gradient element to [−clip_value, clip_value]; clip_value > 0.
void clip_grad_value(const NamedParameters& parameters, double clip_value);

// Clips each parameter's gradient to max_norm separately; returns (name, norm
// before clipping) for every parameter that has a gradient, in order.
std::vector<std::pair<std::string, double>> clip_grad_norm_per_parameter(const NamedParameters& parameters,
                                                                         double max_norm);

}  // namespace rg
