// Multi-head attention's products read in place (autograd/attention_ops.h).
// Every product is a grid of B × H small ones; GridStrides say where head h
// of sentence b lies in each operand:
//   [B, T, H·d]     outer T·H·d, inner d,  rows H·d apart
//   [B, H, Tq, Tk]  outer H·Tq·Tk, inner Tq·Tk, rows Tk apart
// A gradient is written (beta 0) where it is its input's first, else added
// (beta 1).
#include "rmsgrad/autograd/attention_ops.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/gemm.h"

namespace rg {

namespace {

GridStrides heads_of(int64_t steps, int64_t heads, int64_t size) {
  return {.outer = steps * heads * size, .inner = size, .ld = heads * size};
}
GridStrides grid_of(int64_t heads, int64_t rows, int64_t cols) {
  return {.outer = heads * rows * cols, .inner = rows * cols, .ld = cols};
}

// The gradient buffer of input i and the beta that writes or adds to it.
std::pair<Tensor*, float> gradient_of(Node& n, size_t i) {
  bool assign = false;
  Tensor* d = n.input_grad(i, assign);
  return {d, assign ? 0.0f : 1.0f};
}

void check_heads(const char* op, const Var& x, int64_t heads) {
  check(x.defined() && x.rank() == 3, "{}: input {} must be [B, T, H·d]", op, shape_of(x));
  check(heads > 0 && x.dim(2) % heads == 0, "{}: width {} of {} does not split into {} heads", op, x.dim(2),
        x.shape(), heads);
}

}  // namespace

Var head_scores(const Var& q, const Var& k, int64_t heads) {
  check_heads("head_scores", q, heads);
  check_heads("head_scores", k, heads);
  check(q.dim(0) == k.dim(0) && q.dim(2) == k.dim(2), "head_scores: queries {} and keys {} must be [B, ·, H·d] alike",
        q.shape(), k.shape());
  const int64_t batch = q.dim(0), tq = q.dim(1), tk = k.dim(1), size = q.dim(2) / heads;
  const GridStrides sq = heads_of(tq, heads, size), sk = heads_of(tk, heads, size), ss = grid_of(heads, tq, tk);
  Tensor out = Tensor::empty(Shape{batch, heads, tq, tk});
  gemm_grid(batch, heads, false, true, tq, tk, size, 1.0f, q.value().data(), sq, k.value().data(), sk, 0.0f,
            out.data(), ss);
  return tape().record("head_scores", std::move(out), {q, k}, [=](Node& n) {
    const float *g = n.grad.data(), *qv = n.inputs[0]->value.data(), *kv = n.inputs[1]->value.data();
    if (auto [dq, beta] = gradient_of(n, 0); dq)  // dQ = G K
      gemm_grid(batch, heads, false, false, tq, size, tk, 1.0f, g, ss, kv, sk, beta, dq->data(), sq);
    if (auto [dk, beta] = gradient_of(n, 1); dk)  // dK = Gᵀ Q
      gemm_grid(batch, heads, true, false, tk, size, tq, 1.0f, g, ss, qv, sq, beta, dk->data(), sk);
  });
}

Var head_mix(const Var& weights, const Var& v, int64_t heads) {
  check_heads("head_mix", v, heads);
  check(weights.defined() && weights.rank() == 4 && weights.dim(0) == v.dim(0) && weights.dim(1) == heads &&
            weights.dim(3) == v.dim(1),
        "head_mix: weights {} must be [{}, {}, Tq, {}] for values {}", shape_of(weights), v.dim(0), heads, v.dim(1),
        v.shape());
  const int64_t batch = v.dim(0), tq = weights.dim(2), tk = v.dim(1), size = v.dim(2) / heads;
  const GridStrides sw = grid_of(heads, tq, tk), sv = heads_of(tk, heads, size), so = heads_of(tq, heads, size);
  Tensor out = Tensor::empty(Shape{batch, tq, heads * size});
  gemm_grid(batch, heads, false, false, tq, size, tk, 1.0f, weights.value().data(), sw, v.value().data(), sv, 0.0f,
            out.data(), so);
  return tape().record("head_mix", std::move(out), {weights, v}, [=](Node& n) {
    const float *g = n.grad.data(), *wv = n.inputs[0]->value.data(), *vv = n.inputs[1]->value.data();
    if (auto [dw, beta] = gradient_of(n, 0); dw)  // dW = G Vᵀ
      gemm_grid(batch, heads, false, true, tq, tk, size, 1.0f, g, so, vv, sv, beta, dw->data(), sw);
    if (auto [dv, beta] = gradient_of(n, 1); dv)  // dV = Wᵀ G
      gemm_grid(batch, heads, true, false, tk, size, tq, 1.0f, wv, sw, g, so, beta, dv->data(), sv);
  });
}

}  // namespace rg
