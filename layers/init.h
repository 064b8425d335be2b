#pragma once
// Parameter initialisers. Weights follow PyTorch's layout: [out, in] for
// dense layers, [out, in, kh, kw] for convolutions.
//
//   init_constant   every value v
//   init_uniform    U(lo, hi)
//   init_normal     N(0, σ²)
//   xavier_uniform  U(−a, a), a = sqrt(6 / (fan_in + fan_out))   (Glorot & Bengio 2010)
//   orthogonal      Q of the QR decomposition of a standard normal matrix,
//                   columns signed by diag(R)                      (Saxe et al. 2014)
#include "core/random.h"
#include "core/tensor.h"

namespace rg {

Tensor init_constant(const Shape& shape, float value);
Tensor init_uniform(const Shape& shape, float lo, float hi, Generator& gen);
Tensor init_normal(const Shape& shape, float stddev, Generator& gen);
Tensor xavier_uniform(const Shape& shape, Generator& gen);
// A 2-D [rows, cols] matrix with orthonormal rows (rows ≤ cols) or columns.
Tensor orthogonal(const Shape& shape, Generator& gen);

}  // namespace rg
