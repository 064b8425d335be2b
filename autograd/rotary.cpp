// Rotary position embeddings; the rotation and why its backward is the
// inverse rotation are in rotary.h.
//
//   forward   y₁ = x₁·cos − x₂·sin,    y₂ = x₂·cos + x₁·sin      y = R(pθ) x
//   backward  dx₁ += g₁·cos + g₂·sin,  dx₂ += g₂·cos − g₁·sin    dx = R(pθ)ᵀ g
//
// with x₁, x₂ the first and second halves of one head's Dh units. A row
// (b, t) of x holds H heads of Dh units, all turned by the angles of row t,
// so the kernels walk rows and read one [half] slice of each table per row.
#include "rmsgrad/autograd/rotary.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

// cos(p_t θ_i) and sin(p_t θ_i), [T, half] each.
struct Angles {
  Tensor cos, sin;
};

Angles angles_for(const std::vector<int64_t>& positions, int64_t size, double base) {
  const int64_t steps = static_cast<int64_t>(positions.size()), half = size / 2;
  Angles a{Tensor::empty(Shape{steps, half}), Tensor::empty(Shape{steps, half})};
  for (int64_t i = 0; i < half; ++i) {
    const double theta = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(size));
    for (int64_t t = 0; t < steps; ++t) {
      const double angle = static_cast<double>(positions[static_cast<size_t>(t)]) * theta;
      a.cos.data()[t * half + i] = static_cast<float>(std::cos(angle));
      a.sin.data()[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  return a;
}

int64_t row_grain(int64_t heads, int64_t size) { return std::max<int64_t>(1, kGrainElementwise / (heads * size)); }

// out [B, T, H, Dh] (+)= R(p_t θ) in, pair (i, i + half) of every head of
// row (b, t): the forward (Back = false), or with Back the backward's turn
// back, R(p_t θ)ᵀ: the same walk, the sine's sign flipped. Assign: out is
// written without being read (the forward's y; a backward's fresh buffer,
// Node::input_grad); otherwise added into.
template <bool Back, bool Assign>
void rotate(const float* in, const Angles& a, float* out, int64_t batch, int64_t heads, int64_t size) {
  const int64_t steps = a.cos.dim(0), half = size / 2;
  parallel_for(batch * steps, row_grain(heads, size), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float *c = a.cos.data() + (r % steps) * half, *s = a.sin.data() + (r % steps) * half;
      for (int64_t h = 0; h < heads; ++h) {
        const float *x1 = in + (r * heads + h) * size, *x2 = x1 + half;
        float *y1 = out + (r * heads + h) * size, *y2 = y1 + half;
        for (int64_t i = 0; i < half; ++i) {
          const float first = Back ? x1[i] * c[i] + x2[i] * s[i] : x1[i] * c[i] - x2[i] * s[i];
          const float second = Back ? x2[i] * c[i] - x1[i] * s[i] : x2[i] * c[i] + x1[i] * s[i];
          y1[i] = Assign ? first : y1[i] + first;
          y2[i] = Assign ? second : y2[i] + second;
        }
      }
    }
  });
}

}  // namespace

Var rotary(const Var& x, const std::vector<int64_t>& positions, float base) {
  check(x.defined() && x.rank() == 4 && x.dim(3) > 0 && x.dim(3) % 2 == 0,
        "rotary: x {} must be [B, T, H, Dh] with Dh even", shape_of(x));
  check(static_cast<int64_t>(positions.size()) == x.dim(1), "rotary: {} positions for x {} (T = {})",
        positions.size(), x.shape(), x.dim(1));
  check(std::isfinite(base) && base > 0.0f, "rotary: base must be positive and finite, got {}", base);
  const int64_t batch = x.dim(0), heads = x.dim(2), size = x.dim(3);
  Angles a = angles_for(positions, size, base);
  Tensor y = Tensor::empty(x.shape());
  if (y.numel() > 0) rotate<false, true>(x.value().data(), a, y.data(), batch, heads, size);
  return tape().record("rotary", std::move(y), {x}, [a, batch, heads, size](Node& n) {
    bool fresh = false;
    Tensor* dx = n.input_grad(0, fresh);
    if (!dx || n.value.numel() == 0) return;
    if (fresh) rotate<true, true>(n.grad.data(), a, dx->data(), batch, heads, size);
    else rotate<true, false>(n.grad.data(), a, dx->data(), batch, heads, size);
  });
}

Var rotary(const Var& x, int64_t first_position, float base) {
  check(x.defined() && x.rank() == 4, "rotary: x {} must be [B, T, H, Dh]", shape_of(x));
  std::vector<int64_t> positions(static_cast<size_t>(x.dim(1)));
  for (size_t t = 0; t < positions.size(); ++t) positions[t] = first_position + static_cast<int64_t>(t);
  return rotary(x, positions, base);
}

}  // namespace rg
