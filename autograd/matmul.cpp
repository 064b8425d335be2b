// Matrix products, all through gemm (core/gemm.h: oneDNN, or OpenBLAS).
//
//   C = op_a(A) · op_b(B), where op(X) is X or Xᵀ as stored.
//
// Backward, written so that every product is again one gemm with transpose
// flags and nothing is copied (G = dL/dC):
//
//   dA += G · op_b(B)ᵀ        when A is used as stored
//   dA += op_b(B) · Gᵀ        when A is used transposed (dA in A's layout)
//   dB += op_a(A)ᵀ · G        when B is used as stored
//   dB += Gᵀ · op_a(A)        when B is used transposed
//
// Shapes: [M, K]·[K, N]; batched [B, M, K]·[B, K, N]; and [..., M, K]·[K, N],
// where the leading axes of A fold into rows (one weight for every item).
//
// affine(x, W, b) = x·Wᵀ + b is a Linear layer's product and bias in one
// node (db += Σ_rows G, the rest as above). The composed matmul(x, W, false,
// true) + b kept the product as well as the sum, and its gradient as well as
// the sum's: for the logits of a translation model, two extra [T·B, V]
// tensors. It computes the same bits: the same GEMM, then the bias added to
// each row; in backward the same reduction and the same GEMMs.
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/broadcast.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

struct Dims {
  int64_t batch, m, n, k;
};

// C[b] = op_a(A[b]) · op_b(B[b]) for every batch item (β = 0: C is overwritten).
void forward_product(const Dims& d, bool ta, bool tb, const float* a, const float* b, float* c) {
  gemm_batched(d.batch, ta, tb, d.m, d.n, d.k, 1.0f, a, b, 0.0f, c);
}

// beta = 0 writes a fresh gradient buffer, beta = 1 adds into an existing one.
void backward_products(const Dims& d, bool ta, bool tb, const float* a, const float* b, const float* g,
                       float* da, float beta_a, float* db, float beta_b) {
  if (da) {
    if (!ta) gemm_batched(d.batch, false, !tb, d.m, d.k, d.n, 1.0f, g, b, beta_a, da);
    else gemm_batched(d.batch, tb, true, d.k, d.m, d.n, 1.0f, b, g, beta_a, da);
  }
  if (db) {
    if (!tb) gemm_batched(d.batch, !ta, false, d.k, d.n, d.m, 1.0f, a, g, beta_b, db);
    else gemm_batched(d.batch, true, ta, d.n, d.k, d.m, 1.0f, g, a, beta_b, db);
  }
}

}  // namespace

Var matmul(const Var& a, const Var& b, bool trans_a, bool trans_b) {
  check(a.defined() && b.defined(), "matmul: undefined input");
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  Dims d{};
  Shape out_shape;
  if (sa.rank() == 2 && sb.rank() == 2) {
    d = {1, trans_a ? sa[1] : sa[0], trans_b ? sb[0] : sb[1], trans_a ? sa[0] : sa[1]};
    int64_t kb = trans_b ? sb[1] : sb[0];
    check(d.k == kb, "matmul: inner dimensions differ: a is {}{}, b is {}{}", sa, trans_a ? "ᵀ" : "", sb,
          trans_b ? "ᵀ" : "");
    out_shape = Shape{d.m, d.n};
  } else if (sa.rank() == 3 && sb.rank() == 3) {
    check(sa[0] == sb[0], "matmul: batch sizes differ: a is {}, b is {}", sa, sb);
    d = {sa[0], trans_a ? sa[2] : sa[1], trans_b ? sb[1] : sb[2], trans_a ? sa[1] : sa[2]};
    int64_t kb = trans_b ? sb[2] : sb[1];
    check(d.k == kb, "matmul: inner dimensions differ: a is {}{}, b is {}{}", sa, trans_a ? "ᵀ" : "", sb,
          trans_b ? "ᵀ" : "");
    out_shape = Shape{d.batch, d.m, d.n};
  } else if (sa.rank() > 2 && sb.rank() == 2) {
    check(!trans_a, "matmul: a {} with more than two axes cannot be transposed when b {} is a matrix", sa, sb);
    int64_t k = sa[-1];
    d = {1, sa.numel() / std::max<int64_t>(k, 1), trans_b ? sb[0] : sb[1], k};
    if (k == 0) d.m = sa.outer(-1);
    int64_t kb = trans_b ? sb[1] : sb[0];
    check(d.k == kb, "matmul: inner dimensions differ: a is {}, b is {}{}", sa, sb, trans_b ? "ᵀ" : "");
    out_shape = sa.with(-1, d.n);
  } else {
    throw Error(fmt::format("matmul: unsupported ranks: a is {}, b is {} (need 2-D·2-D, 3-D·3-D or N-D·2-D)",
                            sa, sb));
  }
  // The 2-D weight of the N-D·2-D form is shared by every batch item; it is
  // handled as one tall product, so batch = 1 for both operands.
  Tensor out = Tensor::empty(out_shape);
  forward_product(d, trans_a, trans_b, a.value().data(), b.value().data(), out.data());
  return tape().record("matmul", std::move(out), {a, b}, [d, trans_a, trans_b](Node& n) {
    bool fresh_a = false, fresh_b = false;
    Tensor* da = n.input_grad(0, fresh_a);
    Tensor* db = n.input_grad(1, fresh_b);
    backward_products(d, trans_a, trans_b, n.inputs[0]->value.data(), n.inputs[1]->value.data(), n.grad.data(),
                      da ? da->data() : nullptr, fresh_a ? 0.0f : 1.0f, db ? db->data() : nullptr,
                      fresh_b ? 0.0f : 1.0f);
  });
}

Var affine(const Var& x, const Var& weight, const Var& bias) {
  check(x.defined() && weight.defined() && bias.defined(), "affine: undefined input");
  check(weight.rank() == 2 && x.rank() >= 2 && x.dim(-1) == weight.dim(1) && bias.shape() == Shape{weight.dim(0)},
        "affine: x {} must be [..., in], weight {} [out, in] and bias {} [out]", x.shape(), weight.shape(),
        bias.shape());
  const int64_t in = weight.dim(1), out = weight.dim(0);
  const Dims d{1, x.numel() / std::max<int64_t>(in, 1), out, in};
  Tensor y = Tensor::empty(x.shape().with(-1, out));
  forward_product(d, false, true, x.value().data(), weight.value().data(), y.data());
  const float* pb = bias.value().data();
  float* py = y.data();
  parallel_for(d.m, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(out, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t j = 0; j < out; ++j) py[r * out + j] = py[r * out + j] + pb[j];
  });
  return tape().record("affine", std::move(y), {x, weight, bias}, [d](Node& n) {
    bool fresh_bias = false;
    if (Tensor* dbias = n.input_grad(2, fresh_bias)) {  // db += Σ_rows G
      if (fresh_bias) dbias->fill(0.0f);
      accumulate_reduced(*dbias, n.grad);
    }
    bool fresh_x = false, fresh_w = false;
    Tensor* dx = n.input_grad(0, fresh_x);
    Tensor* dw = n.input_grad(1, fresh_w);
    backward_products(d, false, true, n.inputs[0]->value.data(), n.inputs[1]->value.data(), n.grad.data(),
                      dx ? dx->data() : nullptr, fresh_x ? 0.0f : 1.0f, dw ? dw->data() : nullptr,
                      fresh_w ? 0.0f : 1.0f);
  });
}

}  // namespace rg
