#include "rmsgrad/core/broadcast.h"

#include <algorithm>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/reduce_row.h"

namespace rg {

BroadcastPlan plan_broadcast(const Shape& a, const Shape& b, const Shape& out) {
  const int rank = out.rank();
  // Per output axis: the inputs' strides, 0 where an input is broadcast.
  std::array<int64_t, Shape::kMaxRank> sa{}, sb{};
  auto fill = [&](const Shape& s, std::array<int64_t, Shape::kMaxRank>& stride) {
    auto st = s.strides();
    for (int i = 0; i < rank; ++i) {
      int j = s.rank() - rank + i;
      stride[i] = (j < 0 || s[j] == 1) ? 0 : st[j];
    }
  };
  fill(a, sa);
  fill(b, sb);

  BroadcastPlan plan;
  for (int i = 0; i < rank; ++i) {
    if (out[i] == 1) continue;  // size-1 axes carry no iteration
    int k = plan.rank - 1;
    // Merge axis i into the previous one when, for both inputs, stepping the
    // previous axis once equals stepping axis i through all its values.
    if (k >= 0 && plan.stride_a[k] == sa[i] * out[i] && plan.stride_b[k] == sb[i] * out[i]) {
      plan.dims[k] *= out[i];
      plan.stride_a[k] = sa[i];
      plan.stride_b[k] = sb[i];
      continue;
    }
    plan.dims[plan.rank] = out[i];
    plan.stride_a[plan.rank] = sa[i];
    plan.stride_b[plan.rank] = sb[i];
    ++plan.rank;
  }
  if (plan.rank == 0) {  // a scalar-sized output
    plan.rank = 1;
    plan.dims[0] = 1;
  }
  return plan;
}

void accumulate_reduced(Tensor& dst, const Tensor& src) {
  if (dst.shape() == src.shape()) {
    dst.add_(src);
    return;
  }
  check(broadcast_shapes(dst.shape(), src.shape(), "accumulate_reduced") == src.shape(),
        "accumulate_reduced: {} does not broadcast to {}", dst.shape(), src.shape());
  BroadcastPlan plan = plan_broadcast(dst.shape(), src.shape(), src.shape());
  const int64_t n = plan.row_len();
  const int64_t sd = plan.stride_a[plan.rank - 1];
  float* pd = dst.data();
  const float* ps = src.data();
  // Serial: different source rows may add into the same destination row.
  for_each_row(plan, 0, plan.rows(), [&](int64_t od, int64_t os, int64_t) {
    const float* s = ps + os;
    float* d = pd + od;
    if (sd == 0) {
      d[0] += sum_of(s, n);  // in 16 lanes: a serial sum waits on every add
    } else {
      for (int64_t j = 0; j < n; ++j) d[j] += s[j];
    }
  });
}

}  // namespace rg
