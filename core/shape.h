#pragma once
// Shape: the dimensions of a row-major tensor, rank 0 (a scalar) to kMaxRank.
// Stored inline (no heap), because every op creates several.
#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace rg {

class Shape {
 public:
  static constexpr int kMaxRank = 6;

  Shape() = default;  // rank 0: a scalar with one element
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  int rank() const { return rank_; }
  int64_t numel() const;
  // Negative axes count from the end, as in NumPy: -1 is the last axis.
  int64_t operator[](int axis) const { return dims_[normalize_axis(axis)]; }
  int64_t& operator[](int axis) { return dims_[normalize_axis(axis)]; }
  int normalize_axis(int axis) const;  // throws on an out-of-range axis

  // Row-major strides in elements: stride(rank-1) = 1.
  std::array<int64_t, kMaxRank> strides() const;
  // Number of elements before / after `axis` (outer × dim × inner = numel).
  int64_t outer(int axis) const;
  int64_t inner(int axis) const;

  std::vector<int64_t> dims() const { return {dims_.begin(), dims_.begin() + rank_}; }
  Shape with(int axis, int64_t size) const;  // copy with one dimension replaced
  Shape without(int axis) const;             // copy with one axis removed
  std::string str() const;                   // "[2, 3, 4]"

  friend bool operator==(const Shape& a, const Shape& b);
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// NumPy broadcasting: align trailing axes; each pair must be equal or 1.
// Throws naming `op` when the shapes are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace rg

template <>
struct fmt::formatter<rg::Shape> : fmt::formatter<std::string> {
  auto format(const rg::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string>::format(s.str(), ctx);
  }
};
