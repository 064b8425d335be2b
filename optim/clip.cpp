#include "rmsgrad/optim/clip.h"

#include <cmath>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

// Σ x² in double, one partial sum per chunk, added up in chunk order. Within
// a chunk, 8 running sums (one AVX-512 register of doubles) side by side: one
// would make every add wait for the one before.
double sum_of_squares(const Tensor& t) {
  constexpr int kDoubleLanes = 8;
  const float* x = t.data();
  const int64_t n = t.numel();
  std::vector<double> partial(static_cast<size_t>(chunk_count(n, kGrainElementwise)), 0.0);
  parallel_for_chunks(n, kGrainElementwise, [&](int64_t chunk, int64_t lo, int64_t hi) {
    double lanes[kDoubleLanes] = {};
    int64_t i = lo;
    for (; i + kDoubleLanes <= hi; i += kDoubleLanes)
      for (int k = 0; k < kDoubleLanes; ++k) lanes[k] += static_cast<double>(x[i + k]) * x[i + k];
    double sum = 0.0;
    for (; i < hi; ++i) sum += static_cast<double>(x[i]) * x[i];
    for (double lane : lanes) sum += lane;
    partial[chunk] = sum;
  });
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

void scale(Tensor& t, float factor) {
  float* x = t.data();
  parallel_for(t.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) x[i] *= factor;
  });
}

void check_max_norm(double max_norm, const char* what) {
  check(std::isfinite(max_norm) && max_norm > 0.0, "{}: max_norm must be finite and > 0, got {}", what, max_norm);
}

// torch's coefficient: max_norm / (norm + 1e-6), applied only when below 1.
bool clip_factor(double norm, double max_norm, float& factor) {
  if (!std::isfinite(norm)) return false;  // leave the evidence for the caller
  const double c = max_norm / (norm + 1e-6);
  factor = static_cast<float>(c);
  return c < 1.0;
}

}  // namespace

double l2_norm(const Tensor& t) { return std::sqrt(sum_of_squares(t)); }

double grad_norm(const NamedParameters& parameters) {
  double total = 0.0;
  for (const auto& [name, var] : parameters) {
    check(var.defined(), "grad_norm: parameter '{}' is an undefined Var", name);
    if (var.has_grad()) total += sum_of_squares(var.node()->grad);
  }
  return std::sqrt(total);
}

std::string first_nonfinite_gradient(const NamedParameters& parameters) {
  for (const auto& [name, var] : parameters) {
    if (!var.defined() || !var.has_grad()) continue;
    const Tensor& g = var.node()->grad;
    const float* x = g.data();
    for (int64_t i = 0; i < g.numel(); ++i)
      if (!std::isfinite(x[i])) return name + (std::isnan(x[i]) ? " (NaN)" : " (Inf)");
  }
  return {};
}

namespace {

GlobalClip measure_clip(const NamedParameters& parameters, double max_norm, const char* what) {
  check_max_norm(max_norm, what);
  GlobalClip clip{.norm = grad_norm(parameters)};
  float factor = 1.0f;
  if (clip_factor(clip.norm, max_norm, factor)) clip.scale = factor;
  return clip;
}

}  // namespace

double clip_grad_norm(const NamedParameters& parameters, double max_norm) {
  const GlobalClip clip = measure_clip(parameters, max_norm, "clip_grad_norm");
  if (clip.scale != 1.0f)
    for (const auto& [name, var] : parameters)
      if (var.has_grad()) scale(var.node()->grad_buffer(), clip.scale);
  return clip.norm;
}

GlobalClip global_clip(const NamedParameters& parameters, double max_norm) {
  return measure_clip(parameters, max_norm, "global_clip");
}

std::vector<std::pair<std::string, double>> clip_grad_norm_per_parameter(const NamedParameters& parameters,
                                                                         double max_norm) {
  check_max_norm(max_norm, "clip_grad_norm_per_parameter");
  std::vector<std::pair<std::string, double>> norms;
  for (const auto& [name, var] : parameters) {
    check(var.defined(), "clip_grad_norm_per_parameter: parameter '{}' is an undefined Var", name);
    if (!var.has_grad()) continue;
    const double norm = l2_norm(var.node()->grad);
    norms.emplace_back(name, norm);
    float factor = 1.0f;
    if (clip_factor(norm, max_norm, factor)) scale(var.node()->grad_buffer(), factor);
  }
  return norms;
}

void clip_grad_value(const NamedParameters& parameters, double clip_value) {
  check(std::isfinite(clip_value) && clip_value > 0.0, "clip_grad_value: clip_value must be finite and > 0, got {}",
        clip_value);
  const float hi = static_cast<float>(clip_value), lo = -hi;
  for (const auto& [name, var] : parameters) {
    check(var.defined(), "clip_grad_value: parameter '{}' is an undefined Var", name);
    if (!var.has_grad()) continue;
    float* g = var.node()->grad_buffer().data();
    parallel_for(var.node()->grad.numel(), kGrainElementwise, [&](int64_t begin, int64_t end) {
      // Both comparisons are false for a NaN, which therefore stays.
      for (int64_t i = begin; i < end; ++i) g[i] = g[i] < lo ? lo : (g[i] > hi ? hi : g[i]);
    });
  }
}

}  // namespace rg
