#pragma once
// 1-D and 2-D convolution (cross-correlation, as every deep-learning library
// computes it), through im2col and one GEMM per sample (or per group of samples
// on small maps). See conv.cpp for the math.
//
//   conv2d: x [N, C, H, W], weight [O, C, kh, kw], bias [O] or undefined
//           y [N, O, Ho, Wo],  Ho = (H + 2·padding − kh) / stride + 1  (likewise Wo)
//   conv1d: x [N, C, L], weight [O, C, k], bias [O] or undefined
//           y [N, O, Lo],      Lo = (L + 2·padding − k) / stride + 1
//
// Zero padding on every side; the same stride along both axes (torch's
// F.conv1d / F.conv2d with an int stride and padding, dilation 1, groups 1).
#include <cstdint>

#include "rmsgrad/autograd/var.h"

namespace rg {

Var conv2d(const Var& x, const Var& weight, const Var& bias, int64_t stride = 1, int64_t padding = 0);

Var conv1d(const Var& x, const Var& weight, const Var& bias, int64_t stride = 1, int64_t padding = 0);

}  // namespace rg
