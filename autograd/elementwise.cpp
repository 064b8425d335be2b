// Elementwise binary ops with NumPy broadcasting.
//
//   add  y = a + b     da = g          db = g
//   sub  y = a - b     da = g          db = -g
//   mul  y = a · b     da = g · b      db = g · a
//   div  y = a / b     da = g / b      db = -g · a / b²
//   max  y = max(a,b)  da = g·[a ≥ b]  db = g·[a < b]
//
// g is dL/dy. When an input was broadcast, its gradient is the sum of the
// per-element terms over the broadcast axes (accumulate_reduced). Nothing is
// saved for backward beyond the inputs themselves, which the node holds.
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/broadcast.h"
#include "rmsgrad/core/error.h"

namespace rg {

namespace {

// `t` broadcast to `shape` and materialised.
Tensor expand(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  Tensor out = Tensor::empty(shape);
  Tensor zero = Tensor::zeros(shape);
  broadcast_binary(t, zero, out, [](float x, float) { return x; });
  return out;
}

// dst += Σ_broadcast term(g, a, b), with a and b read at each output element;
// `fresh`: dst is a new buffer, to be written rather than added into.
template <class Term>
void accumulate_term(Tensor* dst, bool fresh, const Tensor& g, const Tensor& a, const Tensor& b, Term term) {
  if (!dst) return;
  if (dst->shape() == g.shape() && a.shape() == g.shape() && b.shape() == g.shape()) {
    float* d = dst->data();
    const float *pg = g.data(), *pa = a.data(), *pb = b.data();
    parallel_for(g.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
      if (fresh)
        for (int64_t i = lo; i < hi; ++i) d[i] = term(pg[i], pa[i], pb[i]);
      else
        for (int64_t i = lo; i < hi; ++i) d[i] += term(pg[i], pa[i], pb[i]);
    });
    return;
  }
  if (fresh) dst->fill(0.0f);
  Tensor ea = expand(a, g.shape()), eb = expand(b, g.shape());
  Tensor full = Tensor::empty(g.shape());
  float* f = full.data();
  const float *pg = g.data(), *pa = ea.data(), *pb = eb.data();
  parallel_for(g.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) f[i] = term(pg[i], pa[i], pb[i]);
  });
  accumulate_reduced(*dst, full);
}

// Forward of a broadcasting binary op and its tape entry. `da_term` and
// `db_term` give each element's contribution to the input gradients.
template <class Fwd, class DaTerm, class DbTerm>
Var binary(const char* op, const Var& a, const Var& b, Fwd fwd, DaTerm da_term, DbTerm db_term) {
  check(a.defined() && b.defined(), "{}: undefined input", op);
  Shape out_shape = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(out_shape);
  broadcast_binary(a.value(), b.value(), out, fwd);
  return tape().record(op, std::move(out), {a, b}, [da_term, db_term](Node& n) {
    const Tensor& av = n.inputs[0]->value;
    const Tensor& bv = n.inputs[1]->value;
    bool fresh_a = false, fresh_b = false;
    Tensor* da = n.input_grad(0, fresh_a);
    accumulate_term(da, fresh_a, n.grad, av, bv, da_term);
    Tensor* db = n.input_grad(1, fresh_b);
    accumulate_term(db, fresh_b, n.grad, av, bv, db_term);
  });
}

}  // namespace

Var add(const Var& a, const Var& b) {
  return binary(
      "add", a, b, [](float x, float y) { return x + y; },
      [](float g, float, float) { return g; }, [](float g, float, float) { return g; });
}

Var sub(const Var& a, const Var& b) {
  return binary(
      "sub", a, b, [](float x, float y) { return x - y; },
      [](float g, float, float) { return g; }, [](float g, float, float) { return -g; });
}

Var mul(const Var& a, const Var& b) {
  return binary(
      "mul", a, b, [](float x, float y) { return x * y; },
      [](float g, float, float y) { return g * y; }, [](float g, float x, float) { return g * x; });
}

Var div(const Var& a, const Var& b) {
  return binary(
      "div", a, b, [](float x, float y) { return x / y; },
      [](float g, float, float y) { return g / y; },
      [](float g, float x, float y) { return -g * x / (y * y); });
}

Var maximum(const Var& a, const Var& b) {
  return binary(
      "maximum", a, b, [](float x, float y) { return x >= y ? x : y; },
      [](float g, float x, float y) { return x >= y ? g : 0.0f; },
      [](float g, float x, float y) { return x >= y ? 0.0f : g; });
}

// Scalar forms: y = a + s, y = a · s. The scalar is a constant.
Var add(const Var& a, float s) {
  check(a.defined(), "add: undefined input");
  Tensor out = Tensor::empty(a.shape());
  const float* x = a.value().data();
  float* y = out.data();
  parallel_for(out.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = x[i] + s;
  });
  return tape().record("add_scalar", std::move(out), {a}, [](Node& n) {
    if (Tensor* da = n.input_grad(0)) da->add_(n.grad);
  });
}

Var mul(const Var& a, float s) {
  check(a.defined(), "mul: undefined input");
  Tensor out = Tensor::empty(a.shape());
  const float* x = a.value().data();
  float* y = out.data();
  parallel_for(out.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = x[i] * s;
  });
  return tape().record("mul_scalar", std::move(out), {a}, [s](Node& n) {
    if (Tensor* da = n.input_grad(0)) da->add_(n.grad, s);
  });
}

}  // namespace rg
