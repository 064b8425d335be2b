#pragma once
// Broadcasting kernels: apply f(a, b) elementwise where a and b broadcast to
// the output shape (NumPy rules), and the reverse, summing a gradient over the
// broadcast axes.
//
// A BroadcastPlan first collapses adjacent axes that are laid out alike in
// both inputs ([B, T, H] * [B, T, 1] becomes [B·T, H] * [B·T, 1]), so the
// inner loop is as long as possible. The output is walked row by row (a row is
// the last collapsed axis); an odometer over the outer axes tracks where each
// input's row starts. An input broadcast along an axis has stride 0 there.
#include <array>
#include <cstdint>

#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/tensor.h"

namespace rg {

struct BroadcastPlan {
  int rank = 0;  // of the collapsed iteration space, >= 1
  std::array<int64_t, Shape::kMaxRank> dims{};
  std::array<int64_t, Shape::kMaxRank> stride_a{};
  std::array<int64_t, Shape::kMaxRank> stride_b{};
  int64_t row_len() const { return dims[rank - 1]; }
  int64_t rows() const {
    int64_t r = 1;
    for (int i = 0; i + 1 < rank; ++i) r *= dims[i];
    return r;
  }
};

// `out` must be broadcast_shapes(a, b).
BroadcastPlan plan_broadcast(const Shape& a, const Shape& b, const Shape& out);

// Calls row(offset_a, offset_b, row_index) for rows [lo, hi) of the plan.
template <class RowFn>
void for_each_row(const BroadcastPlan& plan, int64_t lo, int64_t hi, RowFn row) {
  std::array<int64_t, Shape::kMaxRank> index{};
  int64_t offset_a = 0, offset_b = 0, rest = lo;
  for (int i = plan.rank - 2; i >= 0; --i) {
    index[i] = rest % plan.dims[i];
    rest /= plan.dims[i];
    offset_a += index[i] * plan.stride_a[i];
    offset_b += index[i] * plan.stride_b[i];
  }
  for (int64_t r = lo; r < hi; ++r) {
    row(offset_a, offset_b, r);
    for (int i = plan.rank - 2; i >= 0; --i) {  // odometer step
      offset_a += plan.stride_a[i];
      offset_b += plan.stride_b[i];
      if (++index[i] < plan.dims[i]) break;
      offset_a -= index[i] * plan.stride_a[i];
      offset_b -= index[i] * plan.stride_b[i];
      index[i] = 0;
    }
  }
}

// out[i] = f(a[ia], b[ib]) over the broadcast output.
template <class F>
void broadcast_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const float* pa = a.data();
  const float* pb = b.data();
  float* po = out.data();
  if (a.shape() == b.shape()) {  // the common case: no broadcasting at all
    parallel_for(out.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = f(pa[i], pb[i]);
    });
    return;
  }
  BroadcastPlan plan = plan_broadcast(a.shape(), b.shape(), out.shape());
  const int64_t n = plan.row_len();
  const int64_t sa = plan.stride_a[plan.rank - 1], sb = plan.stride_b[plan.rank - 1];
  parallel_for(plan.rows(), std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(n, 1)),
               [&](int64_t lo, int64_t hi) {
                 for_each_row(plan, lo, hi, [&](int64_t oa, int64_t ob, int64_t r) {
                   float* o = po + r * n;
                   for (int64_t j = 0; j < n; ++j) o[j] = f(pa[oa + j * sa], pb[ob + j * sb]);
                 });
               });
}

// dst += src summed over the axes along which dst's shape broadcasts to src's.
// This is the backward of broadcasting: a value used k times gets k gradients.
void accumulate_reduced(Tensor& dst, const Tensor& src);

}  // namespace rg
