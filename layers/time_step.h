#pragma once
// Walking a time-major sequence one step at a time, as every recurrent layer
// and decoder does: sequences are [T, B, N] and their masks [T, B].
#include <cstdint>
#include <span>

#include "rmsgrad/autograd/ops.h"

namespace rg {

// The [B, N] slice of step t of a [T, B, N] sequence (a view on the tape).
inline Var at_step(const Var& sequence, int64_t t) {
  return reshape(slice(sequence, 0, t, t + 1), {sequence.dim(1), sequence.dim(2)});
}

// Row t of a [T, B] mask as a [B] tensor; undefined stays undefined (no mask).
inline Tensor mask_at(const Tensor& mask, int64_t t) {
  if (!mask.defined()) return {};
  const int64_t batch = mask.dim(1);
  return Tensor::from(Shape{batch}, std::span<const float>(mask.data() + t * batch, batch));
}

}  // namespace rg
