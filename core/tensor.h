#pragma once
// Tensor: a float32, row-major, contiguous n-d array over shared storage.
//
// Copying a Tensor is cheap and aliases the same storage (like a pointer);
// `clone()` makes an independent copy. `reshape` returns a view of the same
// storage. Storage is 64-byte aligned so kernels can use wide vector loads.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rmsgrad/core/shape.h"

namespace rg {

class Tensor {
 public:
  Tensor() = default;  // undefined: holds no storage

  // Factories.
  static Tensor empty(const Shape& shape);  // uninitialised
  static Tensor zeros(const Shape& shape);
  static Tensor ones(const Shape& shape);
  static Tensor full(const Shape& shape, float value);
  static Tensor from(const Shape& shape, std::span<const float> values);  // copies
  static Tensor from(const Shape& shape, std::initializer_list<float> values);
  static Tensor scalar(float value);
  static Tensor arange(int64_t n);  // [0, 1, ..., n-1] as a 1-d tensor
  static Tensor zeros_like(const Tensor& t) { return zeros(t.shape()); }

  bool defined() const { return data_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t numel() const { return shape_.numel(); }
  int64_t dim(int axis) const { return shape_[axis]; }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::span<float> span() { return {data(), static_cast<size_t>(numel())}; }
  std::span<const float> span() const { return {data(), static_cast<size_t>(numel())}; }
  std::vector<float> to_vector() const { return {data(), data() + numel()}; }

  // Element access by multi-index, bounds-checked (for tests and printing).
  float at(std::initializer_list<int64_t> index) const;
  float item() const;  // the value of a one-element tensor

  Tensor clone() const;
  Tensor reshape(const Shape& shape) const;  // shares storage; numel must match
  // Elements [offset, offset + shape.numel()) as a tensor of `shape` sharing
  // this storage (a view: an outer slice, e.g. one time step of [T, B, N]).
  // The view is aligned to 4 bytes only.
  Tensor view(int64_t offset, const Shape& shape) const;
  bool shares_storage_with(const Tensor& other) const { return data_ == other.data_; }

  // In-place helpers used by kernels and optimizers.
  void fill(float value);
  void add_(const Tensor& other, float alpha = 1.0f);  // this += alpha * other (same shape)
  void copy_from(const Tensor& other);                 // same numel

  std::string str(int max_per_axis = 6) const;  // "tensor([[1, 2], [3, 4]], shape=[2, 2])"

 private:
  Tensor(std::shared_ptr<float[]> data, const Shape& shape) : data_(std::move(data)), shape_(shape) {}
  std::shared_ptr<float[]> data_;
  Shape shape_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Largest |a - b| over two tensors of the same shape (for tests).
float max_abs_diff(const Tensor& a, const Tensor& b);

// A shape for an error message, formatted only when the message is: "[3, 4]",
// or "undefined" for a tensor that holds nothing. check(ok, "... {}",
// shape_of(x)) then costs a branch when ok, where x.shape().str() would build
// a string every call.
struct ShapeOf {
  const Tensor* tensor;  // nullptr: undefined
};
inline ShapeOf shape_of(const Tensor& t) { return {t.defined() ? &t : nullptr}; }

}  // namespace rg

template <>
struct fmt::formatter<rg::ShapeOf> : fmt::formatter<std::string> {
  auto format(const rg::ShapeOf& s, format_context& ctx) const {
    return fmt::formatter<std::string>::format(s.tensor ? s.tensor->shape().str() : "undefined", ctx);
  }
};
