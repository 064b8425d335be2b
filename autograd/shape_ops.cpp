// Ops that move values without changing them: their backward moves the
// gradient back the same way.
//
//   reshape    same elements, new shape (a view: no copy)    dx += g viewed as x
//   permute    out axis i = x axis order[i]                  dx += permute(g, order⁻¹)
//   concat     pieces side by side along an axis             dx_k += g's k-th block
//   slice      x[.., start:end, ..] along an axis            dx[.., start:end, ..] += g
//   split      slices that tile the axis                     (each is a slice)
//   squeeze, unsqueeze, flatten                              (each is a reshape)
//
// Concat and slice view tensors as [outer, D, inner] around the axis, so a
// block is `inner` contiguous floats repeated `outer` times.
#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

Var reshape(const Var& x, const std::vector<int64_t>& dims) {
  check(x.defined(), "reshape: undefined input");
  std::vector<int64_t> out = dims;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      check(infer < 0, "reshape: more than one -1 in the new shape for {}", x.shape());
      infer = static_cast<int>(i);
    } else {
      check(out[i] >= 0, "reshape: negative dimension {} for {}", out[i], x.shape());
      known *= out[i];
    }
  }
  if (infer >= 0) {
    check(known > 0 && x.numel() % known == 0, "reshape: cannot infer -1 when viewing {} as {} elements per group",
          x.shape(), known);
    out[infer] = x.numel() / known;
  }
  Shape shape(out);
  check(shape.numel() == x.numel(), "reshape: cannot view {} ({} elements) as {} ({} elements)", x.shape(),
        x.numel(), shape, shape.numel());
  return tape().record("reshape", x.value().reshape(shape), {x}, [](Node& n) {
    Node& in = *n.inputs[0];
    if (!in.requires_grad) return;
    if (!in.grad.defined()) {  // the first gradient to arrive: a view of this one, not a copy
      in.grad = n.grad.reshape(in.value.shape());
      in.grad_borrowed = n.grad_borrowed;  // copied before anything adds into it, as the seed is
      return;
    }
    in.grad_buffer().add_(n.grad);
  });
}

namespace {

// out = x with axes permuted; accumulate adds instead of overwriting.
void permute_kernel(const Tensor& x, const std::vector<int>& order, Tensor& out, bool accumulate) {
  const Shape& s = x.shape();
  const int rank = s.rank();
  auto in_strides = s.strides();
  std::array<int64_t, Shape::kMaxRank> dims{}, strides{};  // per output axis
  for (int i = 0; i < rank; ++i) dims[i] = s[order[i]], strides[i] = in_strides[order[i]];
  const int64_t n = rank ? dims[rank - 1] : 1;
  const int64_t step = rank ? strides[rank - 1] : 1;
  const int64_t rows = x.numel() / std::max<int64_t>(n, 1);
  const float* px = x.data();
  float* po = out.data();
  parallel_for(rows, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(n, 1)), [&](int64_t lo, int64_t hi) {
    // Output row r's index over the leading axes, and where it starts in x:
    // found by division for the first row, then counted on like an
    // odometer, with no division per axis and row.
    std::array<int64_t, Shape::kMaxRank> index{};
    int64_t offset = 0, rest = lo;
    for (int i = rank - 2; i >= 0; --i) {
      index[i] = rest % dims[i];
      offset += index[i] * strides[i];
      rest /= dims[i];
    }
    for (int64_t r = lo; r < hi; ++r) {
      if (r > lo) {
        for (int i = rank - 2; i >= 0; --i) {
          offset += strides[i];
          if (++index[i] < dims[i]) break;
          offset -= dims[i] * strides[i];
          index[i] = 0;
        }
      }
      float* o = po + r * n;
      const float* in = px + offset;
      if (step == 1) {  // the last axis stays last (a head split): whole rows
        if (accumulate) {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) o[j] += in[j];
        } else {
          std::memcpy(o, in, sizeof(float) * static_cast<size_t>(n));
        }
      } else if (accumulate) {
        for (int64_t j = 0; j < n; ++j) o[j] += in[j * step];
      } else {
        for (int64_t j = 0; j < n; ++j) o[j] = in[j * step];
      }
    }
  });
}

}  // namespace

Var permute(const Var& x, const std::vector<int>& order) {
  check(x.defined(), "permute: undefined input");
  const int rank = x.rank();
  check(static_cast<int>(order.size()) == rank, "permute: order has {} axes, input {} has {}", order.size(),
        x.shape(), rank);
  std::vector<int> inverse(rank, -1);
  std::vector<int64_t> out_dims(rank);
  for (int i = 0; i < rank; ++i) {
    int a = order[i] < 0 ? order[i] + rank : order[i];
    check(a >= 0 && a < rank && inverse[a] < 0, "permute: order is not a permutation of the axes of {}", x.shape());
    inverse[a] = i;
    out_dims[i] = x.shape()[a];
  }
  std::vector<int> norm(rank);
  for (int i = 0; i < rank; ++i) norm[inverse[i]] = i;
  Tensor out = Tensor::empty(Shape(out_dims));
  permute_kernel(x.value(), norm, out, false);
  return tape().record("permute", std::move(out), {x}, [inverse](Node& n) {
    bool fresh = false;
    if (Tensor* dx = n.input_grad(0, fresh)) permute_kernel(n.grad, inverse, *dx, !fresh);
  });
}

Var transpose(const Var& x, int axis0, int axis1) {
  check(x.defined(), "transpose: undefined input");
  std::vector<int> order(x.rank());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[x.shape().normalize_axis(axis0)], order[x.shape().normalize_axis(axis1)]);
  return permute(x, order);
}

namespace {

// Copies `width` floats from each of `outer` rows; rows are `src_row` and
// `dst_row` floats apart. accumulate adds instead of overwriting.
void copy_blocks(const float* src, int64_t src_row, float* dst, int64_t dst_row, int64_t outer, int64_t width,
                 bool accumulate) {
  parallel_for(outer, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(width, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      const float* s = src + o * src_row;
      float* d = dst + o * dst_row;
      if (accumulate)
        for (int64_t j = 0; j < width; ++j) d[j] += s[j];
      else
        std::memcpy(d, s, sizeof(float) * width);
    }
  });
}

}  // namespace

Var concat(const std::vector<Var>& xs, int axis) {
  check(!xs.empty(), "concat: no inputs");
  for (const Var& x : xs) check(x.defined(), "concat: undefined input");
  const Shape& first = xs[0].shape();
  check(first.rank() >= 1, "concat: cannot concatenate scalars");
  int a = first.normalize_axis(axis);
  int64_t total = 0;
  for (const Var& x : xs) {
    bool same = x.rank() == first.rank();
    for (int i = 0; same && i < first.rank(); ++i) same = i == a || x.shape()[i] == first[i];
    check(same, "concat: shape {} does not match {} outside axis {}", x.shape(), first, axis);
    total += x.shape()[a];
  }
  Shape out_shape = first.with(a, total);
  const int64_t outer = first.outer(a), inner = first.inner(a), out_row = total * inner;
  Tensor out = Tensor::empty(out_shape);
  std::vector<int64_t> offsets;  // of each piece within an output row
  int64_t offset = 0;
  for (const Var& x : xs) {
    offsets.push_back(offset);
    int64_t width = x.shape()[a] * inner;
    copy_blocks(x.value().data(), width, out.data() + offset, out_row, outer, width, false);
    offset += width;
  }
  return tape().record("concat", std::move(out), xs, [offsets, outer, out_row](Node& n) {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      Tensor* dx = n.input_grad(k);
      if (!dx) continue;
      int64_t width = dx->numel() / std::max<int64_t>(outer, 1);
      copy_blocks(n.grad.data() + offsets[k], out_row, dx->data(), width, outer, width, true);
    }
  });
}

Var stack(const std::vector<Var>& xs, int axis) {
  check(!xs.empty(), "stack: no inputs");
  const Shape& first = xs[0].shape();
  int rank = first.rank() + 1;
  int a = axis < 0 ? axis + rank : axis;
  check(a >= 0 && a < rank, "stack: axis {} is out of range for inputs of shape {}", axis, first);
  std::vector<Var> pieces;
  pieces.reserve(xs.size());
  for (const Var& x : xs) {
    check(x.defined() && x.shape() == first, "stack: shape {} differs from the first input's {}",
          shape_of(x), first);
    std::vector<int64_t> dims = first.dims();
    dims.insert(dims.begin() + a, 1);
    pieces.push_back(reshape(x, dims));
  }
  return concat(pieces, a);
}

Var slice(const Var& x, int axis, int64_t start, int64_t end) {
  check(x.defined(), "slice: undefined input");
  check(x.rank() >= 1, "slice: cannot slice a scalar");
  int a = x.shape().normalize_axis(axis);
  const int64_t len = x.shape()[a];
  check(0 <= start && start <= end && end <= len, "slice: range [{}, {}) is invalid for axis {} of {}", start, end,
        axis, x.shape());
  const int64_t outer = x.shape().outer(a), inner = x.shape().inner(a);
  const int64_t in_row = len * inner, width = (end - start) * inner, skip = start * inner;
  // An outer slice (one time step of [T, B, N]) is contiguous: a view, so the
  // step's values are kept once, by the sequence, not again by every slice.
  const bool as_view = outer == 1;
  Tensor out = as_view ? x.value().view(skip, x.shape().with(a, end - start))
                       : Tensor::empty(x.shape().with(a, end - start));
  if (!as_view) copy_blocks(x.value().data() + skip, in_row, out.data(), width, outer, width, false);
  return tape().record("slice", std::move(out), {x}, [outer, in_row, width, skip](Node& n) {
    if (Tensor* dx = n.input_grad(0)) copy_blocks(n.grad.data(), width, dx->data() + skip, in_row, outer, width, true);
  });
}

std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int axis) {
  check(x.defined(), "split: undefined input");
  int a = x.shape().normalize_axis(axis);
  int64_t total = 0;
  for (int64_t s : sizes) {
    check(s >= 0, "split: negative size {}", s);
    total += s;
  }
  check(total == x.shape()[a], "split: sizes add up to {}, but axis {} of {} has {}", total, axis, x.shape(),
        x.shape()[a]);
  std::vector<Var> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, a, start, start + s));
    start += s;
  }
  return out;
}

// torch.squeeze(x, dim): an axis of size 1 goes, any other stays (torch does
// not complain about it, and neither do we). A scalar has axes 0 and −1.
Var squeeze(const Var& x, int axis) {
  check(x.defined(), "squeeze: undefined input");
  const int rank = std::max(x.rank(), 1);
  check(axis >= -rank && axis < rank, "squeeze: axis {} is out of range for {}", axis, x.shape());
  if (x.rank() == 0 || x.shape()[axis] != 1) return reshape(x, x.shape().dims());
  return reshape(x, x.shape().without(axis).dims());
}

Var unsqueeze(const Var& x, int axis) {
  check(x.defined(), "unsqueeze: undefined input");
  const int rank = x.rank() + 1;  // of the result
  check(axis >= -rank && axis < rank, "unsqueeze: axis {} is out of range for {} (the result has {} axes)", axis,
        x.shape(), rank);
  check(rank <= Shape::kMaxRank, "unsqueeze: {} already has the most axes a tensor can have, {}", x.shape(),
        Shape::kMaxRank);
  std::vector<int64_t> dims = x.shape().dims();
  dims.insert(dims.begin() + (axis < 0 ? axis + rank : axis), 1);
  return reshape(x, dims);
}

Var flatten(const Var& x, int start_axis, int end_axis) {
  check(x.defined(), "flatten: undefined input");
  const int rank = std::max(x.rank(), 1);  // a scalar flattens as if it were [1]
  check(start_axis >= -rank && start_axis < rank && end_axis >= -rank && end_axis < rank,
        "flatten: axes {}..{} are out of range for {}", start_axis, end_axis, x.shape());
  const int first = start_axis < 0 ? start_axis + rank : start_axis, last = end_axis < 0 ? end_axis + rank : end_axis;
  check(first <= last, "flatten: start axis {} comes after end axis {} in {}", start_axis, end_axis, x.shape());
  if (x.rank() == 0) return reshape(x, {1});
  std::vector<int64_t> dims = x.shape().dims();
  int64_t merged = 1;
  for (int a = first; a <= last; ++a) merged *= dims[a];
  dims.erase(dims.begin() + first, dims.begin() + last + 1);
  dims.insert(dims.begin() + first, merged);
  return reshape(x, dims);
}

}  // namespace rg
