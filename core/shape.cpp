#include "rmsgrad/core/shape.h"

#include "rmsgrad/core/error.h"

#include <algorithm>

namespace rg {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

Shape::Shape(const std::vector<int64_t>& dims) {
  check(dims.size() <= static_cast<size_t>(kMaxRank), "Shape: rank {} exceeds the maximum {}",
        dims.size(), kMaxRank);
  rank_ = static_cast<int>(dims.size());
  for (int i = 0; i < rank_; ++i) {
    check(dims[i] >= 0, "Shape: negative dimension {} at axis {}", dims[i], i);
    dims_[i] = dims[i];
  }
  // Sizes that come from flags and file headers are multiplied here first: a
  // product past 2^60 elements (of any element type, in bytes) is refused
  // rather than wrapped round into a small, wrong size.
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i)
    check(!__builtin_mul_overflow(n, dims_[i], &n) && n <= (int64_t{1} << 60),
          "Shape {}: more elements than this library can hold (a size from a flag or a file that is too large)",
          str());
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

int Shape::normalize_axis(int axis) const {
  int a = axis < 0 ? axis + rank_ : axis;
  check(a >= 0 && a < rank_, "axis {} is out of range for shape {}", axis, str());
  return a;
}

std::array<int64_t, Shape::kMaxRank> Shape::strides() const {
  std::array<int64_t, kMaxRank> s{};
  int64_t step = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    s[i] = step;
    step *= dims_[i];
  }
  return s;
}

int64_t Shape::outer(int axis) const {
  int a = normalize_axis(axis);
  int64_t n = 1;
  for (int i = 0; i < a; ++i) n *= dims_[i];
  return n;
}

int64_t Shape::inner(int axis) const {
  int a = normalize_axis(axis);
  int64_t n = 1;
  for (int i = a + 1; i < rank_; ++i) n *= dims_[i];
  return n;
}

Shape Shape::with(int axis, int64_t size) const {
  Shape s = *this;
  s[axis] = size;
  return s;
}

Shape Shape::without(int axis) const {
  int a = normalize_axis(axis);
  std::vector<int64_t> d = dims();
  d.erase(d.begin() + a);
  return Shape(d);
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
  return s + "]";
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (a.dims_[i] != b.dims_[i]) return false;
  return true;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    check(da == db || da == 1 || db == 1, "{}: shapes {} and {} cannot be broadcast", op, a, b);
    out[i] = da == 1 ? db : da;
  }
  return Shape(out);
}

}  // namespace rg
