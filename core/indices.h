#pragma once
// Integer index arrays with a shape: the ids of an embedding, the targets of
// a loss, the picks of gather. Plain data beside Tensor (which holds floats),
// so that the data readers (data/) can build them without the autograd.
#include <cstdint>
#include <utility>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/shape.h"

namespace rg {

struct Indices {
  Shape shape;
  std::vector<int32_t> values;  // row-major, shape.numel() of them

  Indices() = default;
  Indices(const Shape& s, std::vector<int32_t> v) : shape(s), values(std::move(v)) {
    check(static_cast<int64_t>(values.size()) == shape.numel(), "Indices: {} values for shape {}", values.size(),
          shape);
  }
  explicit Indices(std::vector<int32_t> v) : shape{static_cast<int64_t>(v.size())}, values(std::move(v)) {}  // 1-d
};

}  // namespace rg
