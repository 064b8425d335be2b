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

// Mean over kernel×kernel windows taken every `stride` pixels, after zero
// padding of `padding` pixels on every side (0 ≤ padding ≤ kernel/2, as torch
// requires): [N, C, H, W] → [N, C, (H + 2·padding − kernel)/stride + 1, (likewise W)].
// torch.nn.functional.avg_pool2d with its defaults ceil_mode = False and
// count_include_pad = True: every window is divided by kernel², the padded
// zeros counted.
Var avg_pool2d(const Var& x, int64_t kernel, int64_t stride, int64_t padding = 0);

// Mean over H×W: [N, C, H, W] → [N, C].
Var global_avg_pool(const Var& x);

}  // namespace rg
