#include "rmsgrad/core/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ostream>

#include "rmsgrad/core/allocator.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

std::shared_ptr<float[]> allocate(int64_t n) {
  return std::shared_ptr<float[]>(allocate_floats(n), [n](float* q) { release_floats(q, n); });
}

}  // namespace

Tensor Tensor::empty(const Shape& shape) { return Tensor(allocate(shape.numel()), shape); }

Tensor Tensor::zeros(const Shape& shape) {
  Tensor t = empty(shape);
  std::memset(t.data(), 0, sizeof(float) * t.numel());
  return t;
}

Tensor Tensor::ones(const Shape& shape) { return full(shape, 1.0f); }

Tensor Tensor::full(const Shape& shape, float value) {
  Tensor t = empty(shape);
  t.fill(value);
  return t;
}

Tensor Tensor::from(const Shape& shape, std::span<const float> values) {
  check(static_cast<int64_t>(values.size()) == shape.numel(),
        "Tensor::from: {} values given for shape {} ({} elements)", values.size(), shape,
        shape.numel());
  Tensor t = empty(shape);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

Tensor Tensor::from(const Shape& shape, std::initializer_list<float> values) {
  return from(shape, std::span<const float>(values.begin(), values.size()));
}

Tensor Tensor::scalar(float value) { return full(Shape{}, value); }

Tensor Tensor::arange(int64_t n) {
  check(n >= 0, "arange: negative length {}", n);
  Tensor t = empty(Shape{n});
  for (int64_t i = 0; i < n; ++i) t.data()[i] = static_cast<float>(i);
  return t;
}

float Tensor::at(std::initializer_list<int64_t> index) const {
  check(defined(), "Tensor::at: undefined tensor");
  check(static_cast<int>(index.size()) == rank(), "Tensor::at: {} indices for shape {}",
        index.size(), shape_);
  auto strides = shape_.strides();
  int64_t offset = 0;
  int axis = 0;
  for (int64_t i : index) {
    check(i >= 0 && i < shape_[axis], "Tensor::at: index {} out of range on axis {} of {}", i,
          axis, shape_);
    offset += i * strides[axis++];
  }
  return data()[offset];
}

float Tensor::item() const {
  check(defined() && numel() == 1, "Tensor::item: needs one element, shape is {}", shape_);
  return data()[0];
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_);
  std::memcpy(t.data(), data(), sizeof(float) * numel());
  return t;
}

Tensor Tensor::reshape(const Shape& shape) const {
  check(shape.numel() == numel(), "reshape: cannot view {} ({} elements) as {} ({} elements)",
        shape_, numel(), shape, shape.numel());
  return Tensor(data_, shape);
}

Tensor Tensor::view(int64_t offset, const Shape& shape) const {
  check(offset >= 0 && offset + shape.numel() <= numel(), "view: elements [{}, {}) are outside {}", offset,
        offset + shape.numel(), shape_);
  return Tensor(std::shared_ptr<float[]>(data_, data_.get() + offset), shape);  // aliasing: owns all of data_
}

void Tensor::fill(float value) {
  float* p = data();
  parallel_for(numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
    std::fill(p + lo, p + hi, value);
  });
}

void Tensor::add_(const Tensor& other, float alpha) {
  check(other.numel() == numel(), "add_: shapes {} and {} differ", shape_, other.shape_);
  float* p = data();
  const float* q = other.data();
  parallel_for(numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) p[i] += alpha * q[i];
  });
}

void Tensor::copy_from(const Tensor& other) {
  check(other.numel() == numel(), "copy_from: shapes {} and {} differ", shape_, other.shape_);
  std::memcpy(data(), other.data(), sizeof(float) * numel());
}

namespace {

// Prints one axis, eliding the middle of long axes with "...".
void print_axis(std::string& out, const float* p, const Shape& s, int axis, int64_t stride_prod,
                int max_per_axis) {
  if (s.rank() == 0) {
    out += fmt::format("{:.6g}", p[0]);
    return;
  }
  int64_t n = s[axis];
  if (n == 0) {
    out += "[]";
    return;
  }
  int64_t step = stride_prod / n;
  out += "[";
  for (int64_t i = 0; i < n; ++i) {
    if (n > max_per_axis && i == max_per_axis / 2) {
      out += "..., ";
      i = n - max_per_axis / 2;
    }
    if (axis + 1 == s.rank())
      out += fmt::format("{:.6g}", p[i]);
    else
      print_axis(out, p + i * step, s, axis + 1, step, max_per_axis);
    if (i + 1 < n) out += ", ";
  }
  out += "]";
}

}  // namespace

std::string Tensor::str(int max_per_axis) const {
  if (!defined()) return "tensor(undefined)";
  std::string out = "tensor(";
  print_axis(out, data(), shape_, 0, numel(), max_per_axis);
  return out + ", shape=" + shape_.str() + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

float max_abs_diff(const Tensor& a, const Tensor& b) {
  check(a.shape() == b.shape(), "max_abs_diff: shapes {} and {} differ", a.shape(), b.shape());
  float m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    float d = std::fabs(a.data()[i] - b.data()[i]);
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace rg
