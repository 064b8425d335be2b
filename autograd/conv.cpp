#include "rmsgrad/autograd/conv.h"

// Convolution as a matrix product (im2col; Chellapilla et al. 2006).
//
// For one sample, unfold every kh×kw window of the padded input into a column:
//
//   col [K, P],  K = C·kh·kw, P = Ho·Wo
//   col[(c·kh + i)·kw + j, oh·Wo + ow] = x[c, oh·s − pad_h + i, ow·s − pad_w + j]   (0 outside)
//
// Then the convolution is one GEMM with the weight viewed as W [O, K]:
//
//   y [O, P] = W [O, K] · col [K, P] + b
//
// and backward is two more, plus the adjoint of the unfolding (col2im, which
// ADDS every column entry back to the input pixel it was copied from):
//
//   dW [O, K] += dy [O, P] · colᵀ [P, K]     summed over the samples
//   db [O]    += Σ_p dy [O, p]
//   dcol [K, P] = Wᵀ [K, O] · dy [O, P],   dx += col2im(dcol)
//
// Small maps (the 6×6 layers at the top of ConvPool-CNN-C) make P too narrow
// for a GEMM to run at speed, so G samples are unfolded side by side into one
// col [K, G·P] and multiplied at once; y and dy are then scattered/gathered
// between [G, O, P] and [O, G·P]. G is chosen so that G·P ≥ kGroupColumns.
//
// A 1×1 convolution with stride 1 and no padding on a large map needs no
// unfolding: col is the sample itself, [C, H·W]. Nothing but the inputs is
// saved for backward; col is rebuilt there (cheaper in memory than keeping N).
//
// conv1d is the same computation on 1×L maps: x [N, C, L] holds the floats of
// x [N, C, 1, L] and weight [O, C, k] those of [O, C, 1, k], so with H = kh = 1,
// pad_h = 0 and pad_w = padding the kernels run unchanged and give exactly
// what conv2d gives on the reshaped tensors.
//
// Samples run in parallel, each thread with its own buffers and its own
// partial dW and db, summed at the end; BLAS runs single-threaded inside.
#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/onednn_conv.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

// Columns per GEMM below which samples are grouped (measured on the
// ConvPool-CNN-C shapes: 6×6 maps gain ~2×, maps of 16×16 and up gain nothing).
constexpr int64_t kGroupColumns = 256;

struct ConvGeometry {
  int64_t n, c, h, w;      // input
  int64_t o, kh, kw;       // weight
  int64_t stride, pad_h, pad_w;  // conv1d: H = kh = 1, pad_h = 0
  int64_t ho, wo;          // output
  int64_t k() const { return c * kh * kw; }
  int64_t p() const { return ho * wo; }
  int64_t in_size() const { return c * h * w; }
  int64_t out_size() const { return o * p(); }
  bool pointwise() const { return kh == 1 && kw == 1 && stride == 1 && pad_h == 0 && pad_w == 0; }  // col = x
  // The output columns [first, last) whose input column ow·stride − pad_w + j
  // lies inside the image; the others read padding.
  std::pair<int64_t, int64_t> inside(int64_t j) const {
    const int64_t first = std::clamp((pad_w - j + stride - 1) / stride, int64_t{0}, wo);
    const int64_t span = w - 1 + pad_w - j;  // ow·stride ≤ span; C++ division truncates, so keep it non-negative
    const int64_t last = span < 0 ? first : std::clamp(span / stride + 1, first, wo);
    return {first, last};
  }
  // Samples per GEMM: enough for kGroupColumns columns, at most `available`.
  int64_t group(int64_t available) const {
    return std::clamp((kGroupColumns + p() - 1) / p(), int64_t{1}, available);
  }
};

// x [C, H, W] → col [K, P] (see above), whose rows are `ld` floats apart (ld ≥ P
// when several samples share one col).
void im2col(const float* x, float* col, int64_t ld, const ConvGeometry& g) {
  if (g.pointwise()) {
    for (int64_t c = 0; c < g.c; ++c) std::memcpy(col + c * ld, x + c * g.p(), sizeof(float) * g.p());
    return;
  }
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        const auto [first, last] = g.inside(j);
        for (int64_t oh = 0; oh < g.ho; ++oh) {
          float* out = row + oh * g.wo;
          const int64_t ih = oh * g.stride - g.pad_h + i;
          if (ih < 0 || ih >= g.h) {
            std::fill(out, out + g.wo, 0.0f);
            continue;
          }
          const float* in = x + (c * g.h + ih) * g.w;
          const int64_t shift = j - g.pad_w;  // column ow reads in[ow·stride + shift]
          std::fill(out, out + first, 0.0f);
          if (g.stride == 1)
            std::memcpy(out + first, in + first + shift, sizeof(float) * (last - first));
          else
            for (int64_t ow = first; ow < last; ++ow) out[ow] = in[ow * g.stride + shift];
          std::fill(out + last, out + g.wo, 0.0f);
        }
      }
}

// The adjoint of im2col: dx [C, H, W] += fold(dcol [K, P]), rows `ld` apart.
void col2im_add(const float* dcol, int64_t ld, float* dx, const ConvGeometry& g) {
  if (g.pointwise()) {
    for (int64_t c = 0; c < g.c; ++c) {
      const float* in = dcol + c * ld;
      float* out = dx + c * g.p();
#pragma omp simd
      for (int64_t q = 0; q < g.p(); ++q) out[q] += in[q];
    }
    return;
  }
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = dcol + ((c * g.kh + i) * g.kw + j) * ld;
        const auto [first, last] = g.inside(j);
        for (int64_t oh = 0; oh < g.ho; ++oh) {
          const int64_t ih = oh * g.stride - g.pad_h + i;
          if (ih < 0 || ih >= g.h) continue;
          const float* in = row + oh * g.wo;
          float* out = dx + (c * g.h + ih) * g.w;
          const int64_t shift = j - g.pad_w;
          if (g.stride == 1) {
#pragma omp simd
            for (int64_t ow = first; ow < last; ++ow) out[ow + shift] += in[ow];
          } else {
            for (int64_t ow = first; ow < last; ++ow) out[ow * g.stride + shift] += in[ow];
          }
        }
      }
}

// Per-thread working memory from the tensor allocator: uninitialised (a
// std::vector would zero-fill it) and, for the large col buffers, recycled
// from its cache rather than fresh pages that fault in on every step.
class Scratch {
 public:
  float* get(int64_t count) {
    if (buffer_.numel() < count) buffer_ = Tensor::empty(Shape{count});
    return buffer_.data();
  }

 private:
  Tensor buffer_;
};

// Samples [s, s + count) of x unfolded side by side: col [K, count·P]. A single
// pointwise sample is its own col, with no copy.
const float* unfold_group(const float* x, int64_t s, int64_t count, Scratch& scratch, const ConvGeometry& g) {
  const float* first = x + s * g.in_size();
  if (count == 1 && g.pointwise()) return first;
  float* col = scratch.get(g.k() * count * g.p());
  for (int64_t i = 0; i < count; ++i) im2col(first + i * g.in_size(), col + i * g.p(), count * g.p(), g);
  return col;
}

// y [N, O, P] = W · col(x_n) + b for every sample.
void conv2d_forward(const float* x, const float* weight, const float* bias, float* y, const ConvGeometry& g) {
  // OpenBLAS's thread count is global: set it to 1 before the parallel region
  // and restore it after, so no thread restores it while another is in a GEMM.
  std::optional<BlasSerialScope> serial_blas;
  if (chunk_count(g.n, 1) > 1) serial_blas.emplace();
  parallel_for_chunks(g.n, 1, [&](int64_t, int64_t lo, int64_t hi) {
    Scratch col, wide;  // wide: the group's y as [O, G·P]
    for (int64_t s = lo; s < hi;) {
      const int64_t count = g.group(hi - s), columns = count * g.p();
      const float* cols = unfold_group(x, s, count, col, g);
      float* ys = y + s * g.out_size();
      if (count == 1) {
        gemm(false, false, g.o, g.p(), g.k(), 1.0f, weight, cols, 0.0f, ys);
      } else {
        float* y_wide = wide.get(g.o * columns);
        gemm(false, false, g.o, columns, g.k(), 1.0f, weight, cols, 0.0f, y_wide);
        for (int64_t i = 0; i < count; ++i)
          for (int64_t o = 0; o < g.o; ++o)
            std::memcpy(ys + i * g.out_size() + o * g.p(), y_wide + o * columns + i * g.p(), sizeof(float) * g.p());
      }
      if (bias)
        for (int64_t i = 0; i < count; ++i)
          for (int64_t o = 0; o < g.o; ++o) {
            float* row = ys + i * g.out_size() + o * g.p();
            const float b = bias[o];
#pragma omp simd
            for (int64_t q = 0; q < g.p(); ++q) row[q] += b;
          }
      s += count;
    }
  });
}

// Adds into dx [N, C, H, W], dw [O, K] and db [O] (any may be null).
void conv2d_backward(const float* x, const float* weight, const float* dy, float* dx, float* dw, float* db,
                     const ConvGeometry& g) {
  const int64_t chunks = chunk_count(g.n, 1);
  // Per-chunk partial sums of dW and db, added up after the parallel loop.
  std::vector<std::vector<float>> dw_part(dw ? chunks : 0), db_part(db ? chunks : 0);
  std::optional<BlasSerialScope> serial_blas;
  if (chunks > 1) serial_blas.emplace();
  parallel_for_chunks(g.n, 1, [&](int64_t chunk, int64_t lo, int64_t hi) {
    Scratch col, dcol, wide;  // wide: the group's dy as [O, G·P]
    if (dw) dw_part[chunk].assign(g.o * g.k(), 0.0f);
    if (db) db_part[chunk].assign(g.o, 0.0f);
    for (int64_t s = lo; s < hi;) {
      const int64_t count = g.group(hi - s), columns = count * g.p();
      const float* dys = dy + s * g.out_size();
      const float* dy_wide = dys;
      if (count > 1) {
        float* gathered = wide.get(g.o * columns);
        for (int64_t i = 0; i < count; ++i)
          for (int64_t o = 0; o < g.o; ++o)
            std::memcpy(gathered + o * columns + i * g.p(), dys + i * g.out_size() + o * g.p(), sizeof(float) * g.p());
        dy_wide = gathered;
      }
      if (dw) {
        const float* cols = unfold_group(x, s, count, col, g);
        gemm(false, true, g.o, g.k(), columns, 1.0f, dy_wide, cols, 1.0f, dw_part[chunk].data());
      }
      if (db)
        for (int64_t i = 0; i < count; ++i)
          for (int64_t o = 0; o < g.o; ++o) {
            const float* row = dys + i * g.out_size() + o * g.p();
            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
            for (int64_t q = 0; q < g.p(); ++q) sum += row[q];
            db_part[chunk][o] += sum;
          }
      if (dx) {
        float* dxs = dx + s * g.in_size();
        if (count == 1 && g.pointwise()) {  // dx [C, P] += Wᵀ dy
          gemm(true, false, g.k(), g.p(), g.o, 1.0f, weight, dys, 1.0f, dxs);
        } else {
          float* dcols = dcol.get(g.k() * columns);
          gemm(true, false, g.k(), columns, g.o, 1.0f, weight, dy_wide, 0.0f, dcols);
          for (int64_t i = 0; i < count; ++i) col2im_add(dcols + i * g.p(), columns, dxs + i * g.in_size(), g);
        }
      }
      s += count;
    }
  });
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    if (dw)
      for (int64_t i = 0; i < g.o * g.k(); ++i) dw[i] += dw_part[chunk][i];
    if (db)
      for (int64_t o = 0; o < g.o; ++o) db[o] += db_part[chunk][o];
  }
}

// The checks conv2d and conv1d share; `x_axes` and `w_axes` name the layouts
// ("N, C, H, W" or "N, C, L") in the messages.
void check_conv_inputs(const char* op, const Var& x, const Var& weight, const Var& bias, int64_t rank,
                       const char* x_axes, const char* w_axes, int64_t stride, int64_t padding) {
  check(x.defined() && weight.defined(), "{}: undefined input or weight", op);
  check(x.rank() == rank, "{}: input must be [{}], got {}", op, x_axes, x.shape());
  check(weight.rank() == rank, "{}: weight must be [{}], got {}", op, w_axes, weight.shape());
  check(weight.dim(1) == x.dim(1), "{}: input {} has {} channels but weight {} expects {}", op, x.shape(), x.dim(1),
        weight.shape(), weight.dim(1));
  check(stride >= 1 && padding >= 0, "{}: stride must be ≥ 1 and padding ≥ 0, got stride {} padding {}", op, stride,
        padding);
  if (bias.defined())  // check() evaluates its arguments, so bias.shape() only when there is a bias
    check(bias.shape() == Shape{weight.dim(0)}, "{}: bias {} must be [{}] for weight {}", op, bias.shape(),
          weight.dim(0), weight.shape());
}

// Convolutions run on oneDNN's own primitives (core/onednn_conv.h) when the
// product library is oneDNN, the kernel is wider than 1×1 and the input has
// at least one block of 16 channels; else on the im2col kernels above (whose
// GEMMs then run on oneDNN too). Measured on ConvPool-CNN-C's layers
// (BENCHMARKS.md, "Which library runs the convolutions"), forward and
// backward, 1 and 2 threads: the primitives take 0.72–0.79 of im2col's time
// on the 3×3 layers of 96 and 192 channels, but 1.5–2.2× on the first layer's
// 3 channels and 1.1× on the 1×1 layers, which im2col runs as plain GEMMs.
constexpr int64_t kOneDnnMinChannels = 16;
bool on_onednn(const ConvGeometry& g) {
  return g.c >= kOneDnnMinChannels && !g.pointwise() && onednn_available() &&
         gemm_library() == GemmLibrary::OneDNN;
}

ConvDims dims_of(const ConvGeometry& g) {
  return {g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.stride, g.pad_h, g.pad_w, g.ho, g.wo};
}

// Runs the forward kernel and records the node, whose output takes `out_shape`
// (conv1d's [N, O, Lo] is the [N, O, 1, Lo] the kernels write: the same floats).
Var record_conv(const char* op, const Var& x, const Var& weight, const Var& bias, const ConvGeometry& g,
                Shape out_shape) {
  Tensor y = Tensor::empty(std::move(out_shape));
  const float* b = bias.defined() ? bias.value().data() : nullptr;
  const bool onednn = on_onednn(g);
  if (onednn)
    onednn_conv_forward(dims_of(g), x.value().data(), weight.value().data(), b, y.data());
  else
    conv2d_forward(x.value().data(), weight.value().data(), b, y.data(), g);
  std::vector<Var> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return tape().record(op, std::move(y), inputs, [g, onednn](Node& node) {
    const float* x = node.inputs[0]->value.data();
    const float* w = node.inputs[1]->value.data();
    if (onednn) {
      ConvGradients grads;
      if (Tensor* dx = node.input_grad(0, grads.assign_dx)) grads.dx = dx->data();
      if (Tensor* dw = node.input_grad(1, grads.assign_dw)) grads.dw = dw->data();
      if (node.inputs.size() > 2)
        if (Tensor* db = node.input_grad(2, grads.assign_db)) grads.db = db->data();
      onednn_conv_backward(dims_of(g), x, w, node.grad.data(), grads);
      return;
    }
    Tensor* dx = node.input_grad(0);
    Tensor* dw = node.input_grad(1);
    Tensor* db = node.inputs.size() > 2 ? node.input_grad(2) : nullptr;
    conv2d_backward(x, w, node.grad.data(), dx ? dx->data() : nullptr, dw ? dw->data() : nullptr,
                    db ? db->data() : nullptr, g);
  });
}

}  // namespace

Var conv2d(const Var& x, const Var& weight, const Var& bias, int64_t stride, int64_t padding) {
  check_conv_inputs("conv2d", x, weight, bias, 4, "N, C, H, W", "O, C, kh, kw", stride, padding);
  ConvGeometry g{x.dim(0), x.dim(1), x.dim(2), x.dim(3), weight.dim(0), weight.dim(2), weight.dim(3), stride, padding,
                 padding, 0, 0};
  check(g.h + 2 * padding >= g.kh && g.w + 2 * padding >= g.kw,
        "conv2d: kernel {}×{} is larger than the padded input {} (padding {})", g.kh, g.kw, x.shape(), padding);
  g.ho = (g.h + 2 * padding - g.kh) / stride + 1;
  g.wo = (g.w + 2 * padding - g.kw) / stride + 1;
  return record_conv("conv2d", x, weight, bias, g, Shape{g.n, g.o, g.ho, g.wo});
}

Var conv1d(const Var& x, const Var& weight, const Var& bias, int64_t stride, int64_t padding) {
  check_conv_inputs("conv1d", x, weight, bias, 3, "N, C, L", "O, C, k", stride, padding);
  // A 2-D convolution of 1×L maps with 1×k kernels, padded along W only.
  ConvGeometry g{x.dim(0), x.dim(1), 1, x.dim(2), weight.dim(0), 1, weight.dim(2), stride, 0, padding, 1, 0};
  check(g.w + 2 * padding >= g.kw, "conv1d: kernel {} is larger than the padded input {} (padding {})", g.kw,
        x.shape(), padding);
  g.wo = (g.w + 2 * padding - g.kw) / stride + 1;
  return record_conv("conv1d", x, weight, bias, g, Shape{g.n, g.o, g.wo});
}

}  // namespace rg
