#pragma once
// 2-D convolution (cross-correlation, as every deep-learning library computes
// it), through im2col and one GEMM per sample (or per group of samples on small maps). See conv.cpp for the math.
//
//   x [N, C, H, W], weight [O, C, kh, kw], bias [O] or undefined
//   y [N, O, Ho, Wo],  Ho = (H + 2·padding − kh) / stride + 1  (likewise Wo)
//
// Zero padding on every side; the same stride along both axes.
#include <cstdint>

#include "rmsgrad/autograd/var.h"

namespace rg {

Var conv2d(const Var& x, const Var& weight, const Var& bias, int64_t stride = 1, int64_t padding = 0);

}  // namespace rg
