#pragma once
// The norms a fused recurrent cell runs inside its kernels (autograd/norm_ops.h's
// RowNorm), for the cells' tests: each case, its parameters as leaves, and the
// same norm as its own op to compare with.
#include <vector>

#include "rmsgrad/rmsgrad.h"

namespace rg::test {

// The norms the fused GRU and LSTM ops can run inside their kernels, each
// with its gain (and bias) as a leaf: LayerNorm, RMSNorm with and without its
// bias, pRMSNorm over 3 of the units, L2-Norm, ε outside the root, and none
// (and LayerNorm without its bias, which only a RowNorm can ask for).
struct CellNormCase {
  const char* name;
  RowNormKind kind;
  bool bias;
  RmsNormConfig config;
};
inline const CellNormCase kCellNorms[] = {
    {"layernorm", RowNormKind::Layer, true, {}},
    {"layernorm without bias", RowNormKind::Layer, false, {}},
    {"rmsnorm", RowNormKind::Rms, false, {}},
    {"rmsnorm+bias", RowNormKind::Rms, true, {}},
    {"prmsnorm", RowNormKind::Rms, false, {.k = 3}},
    {"l2norm", RowNormKind::Rms, false, {.l2 = true}},
    {"rmsnorm eps outside", RowNormKind::Rms, false, {.eps_inside = false}},
    {"none", RowNormKind::None, false, {}},
};

// A RowNorm of n units with gains around 1 and biases around 0 taken from gen.
inline RowNorm cell_norm(const CellNormCase& c, int64_t n, Generator& gen) {
  RowNorm norm{c.kind, {}, {}, c.config};
  if (c.kind == RowNormKind::None) return norm;
  norm.gain = Var(normal(Shape{n}, 1.0f, 0.3f, gen), true);
  if (c.bias) norm.bias = Var(normal(Shape{n}, 0.0f, 0.3f, gen), true);
  return norm;
}

// The same norm as its own op (norm_ops.h), which the fused cells must match.
inline Var apply_norm(const RowNorm& norm, const Var& x) {
  switch (norm.kind) {
    case RowNormKind::None: return x;
    case RowNormKind::Layer: return layer_norm(x, norm.gain, norm.bias, norm.config.eps);
    case RowNormKind::Rms: return rms_norm(x, norm.gain, norm.bias, norm.config);
  }
  return x;
}

inline std::vector<Var> norm_leaves(const RowNorm& norm) {
  std::vector<Var> leaves;
  for (const Var& v : {norm.gain, norm.bias})
    if (v.defined()) leaves.push_back(v);
  return leaves;
}

}  // namespace rg::test
