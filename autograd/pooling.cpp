#include "rmsgrad/autograd/pooling.h"

// Max pooling
//   y[n, c, oh, ow] = max_{i, j < k} x[n, c, oh·s + i, ow·s + j]
// is a selection, so its backward routes each dy to the one input it selected:
//   dx[n, c, argmax] += dy[n, c, oh, ow]
// (overlapping windows, stride < kernel, may route several to one pixel). The
// forward saves the flat index of every argmax within its plane.
//
// Average pooling, with zero padding p and the padding counted (torch's
// count_include_pad), so every window has the same divisor k²:
//   y[n, c, oh, ow] = (1 / k²) Σ_{i, j < k} x[n, c, oh·s − p + i, ow·s − p + j]   (0 outside)
// is linear in x; its backward spreads each dy evenly over the window's pixels
// inside the image:
//   dx[n, c, oh·s − p + i, ow·s − p + j] += dy[n, c, oh, ow] / k²
// Nothing is saved.
//
// Global average pooling
//   y[n, c] = (1 / HW) Σ_{h, w} x[n, c, h, w],   dx[n, c, h, w] += dy[n, c] / HW.
#include <algorithm>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

int64_t plane_grain(int64_t plane) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(plane, 1)); }

// x [planes, H, W] → y [planes, Ho, Wo] and argmax [planes, Ho, Wo].
void max_pool_forward(const float* x, float* y, int32_t* argmax, int64_t planes, int64_t h, int64_t w, int64_t ho,
                      int64_t wo, int64_t k, int64_t s) {
  parallel_for(planes, plane_grain(h * w), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const float* in = x + p * h * w;
      for (int64_t oh = 0; oh < ho; ++oh)
        for (int64_t ow = 0; ow < wo; ++ow) {
          int64_t best = oh * s * w + ow * s;
          for (int64_t i = 0; i < k; ++i)
            for (int64_t j = 0; j < k; ++j) {
              const int64_t at = (oh * s + i) * w + ow * s + j;
              if (in[at] > in[best]) best = at;  // strict: ties keep the first
            }
          const int64_t out = (p * ho + oh) * wo + ow;
          y[out] = in[best];
          argmax[out] = static_cast<int32_t>(best);
        }
    }
  });
}

// Adds dy [planes, Ho, Wo] into dx [planes, H, W] at the saved argmax.
void max_pool_backward(const float* dy, const int32_t* argmax, float* dx, int64_t planes, int64_t hw, int64_t out) {
  parallel_for(planes, plane_grain(hw), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p)
      for (int64_t q = 0; q < out; ++q) dx[p * hw + argmax[p * out + q]] += dy[p * out + q];
  });
}

// The window of output (oh, ow) clipped to the image: rows [h0, h1), columns [w0, w1).
struct Window {
  int64_t h0, h1, w0, w1;
};

Window window(int64_t oh, int64_t ow, int64_t h, int64_t w, int64_t k, int64_t s, int64_t p) {
  const int64_t top = oh * s - p, left = ow * s - p;
  return {std::max<int64_t>(top, 0), std::min(top + k, h), std::max<int64_t>(left, 0), std::min(left + k, w)};
}

// x [planes, H, W] → y [planes, Ho, Wo].
void avg_pool_forward(const float* x, float* y, int64_t planes, int64_t h, int64_t w, int64_t ho, int64_t wo,
                      int64_t k, int64_t s, int64_t p) {
  const float inv = 1.0f / static_cast<float>(k * k);
  parallel_for(planes, plane_grain(h * w), [&](int64_t lo, int64_t hi) {
    for (int64_t plane = lo; plane < hi; ++plane) {
      const float* in = x + plane * h * w;
      for (int64_t oh = 0; oh < ho; ++oh)
        for (int64_t ow = 0; ow < wo; ++ow) {
          const Window win = window(oh, ow, h, w, k, s, p);
          float sum = 0.0f;
          for (int64_t i = win.h0; i < win.h1; ++i)
            for (int64_t j = win.w0; j < win.w1; ++j) sum += in[i * w + j];
          y[(plane * ho + oh) * wo + ow] = sum * inv;
        }
    }
  });
}

// dx [planes, H, W] += the adjoint of avg_pool_forward applied to dy [planes, Ho, Wo].
void avg_pool_backward(const float* dy, float* dx, int64_t planes, int64_t h, int64_t w, int64_t ho, int64_t wo,
                       int64_t k, int64_t s, int64_t p) {
  const float inv = 1.0f / static_cast<float>(k * k);
  parallel_for(planes, plane_grain(h * w), [&](int64_t lo, int64_t hi) {
    for (int64_t plane = lo; plane < hi; ++plane) {
      float* out = dx + plane * h * w;
      for (int64_t oh = 0; oh < ho; ++oh)
        for (int64_t ow = 0; ow < wo; ++ow) {
          const Window win = window(oh, ow, h, w, k, s, p);
          const float g = dy[(plane * ho + oh) * wo + ow] * inv;
          for (int64_t i = win.h0; i < win.h1; ++i)
            for (int64_t j = win.w0; j < win.w1; ++j) out[i * w + j] += g;
        }
    }
  });
}

}  // namespace

Var max_pool2d(const Var& x, int64_t kernel, int64_t stride) {
  check(x.defined(), "max_pool2d: undefined input");
  check(x.rank() == 4, "max_pool2d: input must be [N, C, H, W], got {}", x.shape());
  check(kernel >= 1 && stride >= 1, "max_pool2d: kernel and stride must be ≥ 1, got kernel {} stride {}", kernel,
        stride);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  check(h >= kernel && w >= kernel, "max_pool2d: kernel {} is larger than the input {}", kernel, x.shape());
  const int64_t ho = (h - kernel) / stride + 1, wo = (w - kernel) / stride + 1, planes = n * c;
  Tensor y = Tensor::empty(Shape{n, c, ho, wo});
  auto argmax = std::make_shared<std::vector<int32_t>>(planes * ho * wo);
  max_pool_forward(x.value().data(), y.data(), argmax->data(), planes, h, w, ho, wo, kernel, stride);
  return tape().record("max_pool2d", std::move(y), {x}, [argmax, planes, h, w, ho, wo](Node& node) {
    if (Tensor* dx = node.input_grad(0))
      max_pool_backward(node.grad.data(), argmax->data(), dx->data(), planes, h * w, ho * wo);
  });
}

Var avg_pool2d(const Var& x, int64_t kernel, int64_t stride, int64_t padding) {
  check(x.defined(), "avg_pool2d: undefined input");
  check(x.rank() == 4, "avg_pool2d: input must be [N, C, H, W], got {}", x.shape());
  check(kernel >= 1 && stride >= 1, "avg_pool2d: kernel and stride must be ≥ 1, got kernel {} stride {}", kernel,
        stride);
  check(padding >= 0 && 2 * padding <= kernel, "avg_pool2d: padding must be in [0, kernel/2], got padding {} kernel {}",
        padding, kernel);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  check(h + 2 * padding >= kernel && w + 2 * padding >= kernel,
        "avg_pool2d: kernel {} is larger than the padded input {} (padding {})", kernel, x.shape(), padding);
  const int64_t ho = (h + 2 * padding - kernel) / stride + 1, wo = (w + 2 * padding - kernel) / stride + 1;
  const int64_t planes = n * c;
  Tensor y = Tensor::empty(Shape{n, c, ho, wo});
  avg_pool_forward(x.value().data(), y.data(), planes, h, w, ho, wo, kernel, stride, padding);
  return tape().record("avg_pool2d", std::move(y), {x},
                       [planes, h, w, ho, wo, kernel, stride, padding](Node& node) {
                         if (Tensor* dx = node.input_grad(0))
                           avg_pool_backward(node.grad.data(), dx->data(), planes, h, w, ho, wo, kernel, stride,
                                             padding);
                       });
}

Var global_avg_pool(const Var& x) {
  check(x.defined(), "global_avg_pool: undefined input");
  check(x.rank() == 4, "global_avg_pool: input must be [N, C, H, W], got {}", x.shape());
  const int64_t planes = x.dim(0) * x.dim(1), hw = x.dim(2) * x.dim(3);
  check(hw > 0, "global_avg_pool: empty maps in {}", x.shape());
  const float inv = 1.0f / static_cast<float>(hw);
  Tensor y = Tensor::empty(Shape{x.dim(0), x.dim(1)});
  const float* in = x.value().data();
  float* out = y.data();
  parallel_for(planes, plane_grain(hw), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t q = 0; q < hw; ++q) sum += in[p * hw + q];
      out[p] = sum * inv;
    }
  });
  return tape().record("global_avg_pool", std::move(y), {x}, [planes, hw, inv](Node& node) {
    Tensor* dx = node.input_grad(0);
    if (!dx) return;
    const float* dy = node.grad.data();
    float* d = dx->data();
    parallel_for(planes, plane_grain(hw), [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const float g = dy[p] * inv;
#pragma omp simd
        for (int64_t q = 0; q < hw; ++q) d[p * hw + q] += g;
      }
    });
  });
}

}  // namespace rg
