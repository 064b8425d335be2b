// A layer's weight, plain or weight-normalized; the equations are in
// weighted_layer.h.
#include "rmsgrad/layers/weighted_layer.h"

#include <cmath>

#include "rmsgrad/autograd/weight_norm.h"

namespace rg {

Var WeightedLayer::effective_weight() const { return has_weight_norm() ? weight_norm(weight_v, weight_g) : weight; }

void WeightedLayer::register_weight(Tensor w, bool weight_norm) {
  if (weight_norm) {
    weight_v = register_parameter("weight_v", w);
    weight_g = register_parameter("weight_g", weight_norm_gains(w));
  } else {
    weight = register_parameter("weight", w);
  }
}

void WeightedLayer::init_from_output(const Tensor& t, int64_t n, int64_t per) {
  const int64_t outputs = weight_g.numel();
  const float* pt = t.data();
  for (int64_t o = 0; o < outputs; ++o) {
    double mean = 0.0, variance = 0.0;  // two passes in double over n × per
    for (int64_t s = 0; s < n; ++s)
      for (int64_t q = 0; q < per; ++q) mean += pt[(s * outputs + o) * per + q];
    mean /= static_cast<double>(n * per);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t q = 0; q < per; ++q) {
        const double centred = pt[(s * outputs + o) * per + q] - mean;
        variance += centred * centred;
      }
    variance /= static_cast<double>(n * per);
    const double scale = 1.0 / std::sqrt(variance + 1e-10);
    weight_g.value().data()[o] = static_cast<float>(scale);
    if (bias.defined()) bias.value().data()[o] = static_cast<float>(-mean * scale);
  }
}

}  // namespace rg
