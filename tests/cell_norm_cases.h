#pragma once
// The norms a fused recurrent cell runs inside its kernels (autograd/norm_ops.h's
// RowNorm), for the cells' tests: each case, its parameters as leaves, and the
// same norm as its own op to compare with.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

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

// A gradient check over an op's inputs followed by its norms' gains and
// biases: with_leaf_values(inputs, norms) is the check's inputs, and inside the
// checked function bind_leaves(norm, v, next) is the norm with its leaves
// taken from v[next], v[next + 1], ... in the same order.
inline std::vector<Tensor> with_leaf_values(std::vector<Tensor> inputs, const std::vector<const RowNorm*>& norms) {
  for (const RowNorm* norm : norms)
    for (const Var& leaf : norm_leaves(*norm)) inputs.push_back(leaf.value());
  return inputs;
}
inline RowNorm bind_leaves(RowNorm norm, const std::vector<Var>& v, size_t& next) {
  if (norm.gain.defined()) norm.gain = v[next++];
  if (norm.bias.defined()) norm.bias = v[next++];
  return norm;
}

// A fused op with two norms inside against the same function with the norms
// as their own ops: each gets fresh leaves of `inputs` and the same norms, and
// one backward from the same seed. Every row runs the same float operations
// in the same order either way, so the outputs and the inputs' gradients must
// be equal bits. The norms' gains and biases are sums over rows that the two
// cut into other chunks (the same terms in another order): for the O(1) terms
// of a few rows, within 1e-5.
using CellWithNorms = std::function<Var(const std::vector<Var>&, const RowNorm&, const RowNorm&)>;
inline void check_fused_equals_separate(const std::vector<Tensor>& inputs, const RowNorm& first, const RowNorm& second,
                                        const CellWithNorms& fused, const CellWithNorms& separate, Generator& gen) {
  std::vector<Var> a = fresh_leaves(inputs), b = fresh_leaves(inputs);
  Var ya = fused(a, first, second);
  const Tensor seed = normal(ya.shape(), 0.0f, 1.0f, gen);
  tape().backward(ya, seed);
  tape().clear();
  std::vector<Tensor> fused_param_grads;
  for (const RowNorm* norm : {&first, &second})
    for (Var& leaf : norm_leaves(*norm)) fused_param_grads.push_back(leaf.grad().clone()), leaf.zero_grad();
  Var yb = separate(b, first, second);
  tape().backward(yb, seed);
  tape().clear();
  all_close(ya.value(), yb.value(), 0.0f, 0.0f, "output");
  for (size_t i = 0; i < a.size(); ++i) all_close(a[i].grad(), b[i].grad(), 0.0f, 0.0f, "grad " + std::to_string(i));
  size_t i = 0;
  for (const RowNorm* norm : {&first, &second})
    for (Var& leaf : norm_leaves(*norm)) all_close(fused_param_grads[i++], leaf.grad(), 1e-5f, 1e-5f, "norm parameter grad");
}

}  // namespace rg::test
