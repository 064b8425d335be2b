#pragma once
// Pooling over the spatial axes of [N, C, H, W] maps. See pooling.cpp.
#include <cstdint>

#include "rmsgrad/autograd/var.h"

namespace rg {

// Max over kernel×kernel windows taken every `stride` pixels, no padding:
// [N, C, H, W] → [N, C, (H − kernel)/stride + 1, (W − kernel)/stride + 1].
// The gradient goes to the first maximum of each window (row-major order),
// as in PyTorch.
Var max_pool2d(const Var& x, int64_t kernel, int64_t stride);

// Mean over H×W: [N, C, H, W] → [N, C].
Var global_avg_pool(const Var& x);

}  // namespace rg
