#pragma once
// Parameter initialisers. Weights follow PyTorch's layout: [out, in] for
// dense layers, [out, in, kh, kw] for convolutions, and for those
//   fan_in  = in · kh · kw,   fan_out = out · kh · kw.
//
//   init_constant   every value v
//   init_uniform    U(lo, hi)
//   init_normal     N(0, σ²)
//   shift_center    w + c: any of these centred at c instead of 0 (the paper's
//                   Figure 4 moves RNNSearch's weights to c = 0.2)
//   xavier_uniform  U(−a, a), a = sqrt(6 / (fan_in + fan_out)), so that
//                   Var(w) = a²/3 = 2 / (fan_in + fan_out)    (Glorot & Bengio 2010)
//   orthogonal      Q of the QR decomposition A = QR of a standard normal
//                   matrix, column j multiplied by sign(R_jj)  (Saxe et al. 2014)
//
// orthogonal follows torch.nn.init.orthogonal_: the weight is viewed as
// [rows, cols] = [shape[0], numel / shape[0]]; a tall (or square) matrix gets
// orthonormal columns (WᵀW = I), a wide one orthonormal rows (WWᵀ = I), by
// factoring its transpose. Without the sign correction Q would not be
// uniformly (Haar) distributed, because LAPACK's Householder QR fixes the
// signs of R's diagonal by convention, not at random. LAPACK's sgeqrf_ and
// sorgqr_ come from OpenBLAS.
//
// Layers choose among these with one enum (WeightInit) and make_weight.
#include <cstdint>

#include "rmsgrad/core/random.h"
#include "rmsgrad/core/tensor.h"

namespace rg {

Tensor init_constant(const Shape& shape, float value);
Tensor init_uniform(const Shape& shape, float lo, float hi, Generator& gen);
Tensor init_normal(const Shape& shape, float stddev, Generator& gen);
Tensor xavier_uniform(const Shape& shape, Generator& gen);
Tensor orthogonal(const Shape& shape, Generator& gen);
Tensor shift_center(Tensor weight, float center);

// fan_in and fan_out of a weight of rank ≥ 2, as defined above.
struct Fans {
  int64_t in, out;
};
Fans weight_fans(const Shape& shape);

enum class WeightInitKind {
  XavierUniform,  // Glorot & Bengio 2010
  Normal,         // N(0, stddev²): Nematus uses 0.01, Salimans' weight-norm code 0.05
  Orthogonal,     // Saxe et al. 2014
  FanInUniform,   // U(−1/sqrt(fan_in), 1/sqrt(fan_in)): PyTorch's default for nn.Linear
};

struct WeightInit {
  WeightInitKind kind = WeightInitKind::XavierUniform;
  float stddev = 0.01f;  // Normal only
  float center = 0.0f;   // added to every value, whatever the kind (shift_center)
};

// A new weight of `shape` drawn as `init` says.
Tensor make_weight(const Shape& shape, const WeightInit& init, Generator& gen);

}  // namespace rg
