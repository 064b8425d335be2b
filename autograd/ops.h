#pragma once
// The differentiable ops. Each family lives in its own file with forward and
// backward side by side:
//
//   elementwise.cpp  add sub mul div maximum, with NumPy broadcasting
//   unary.cpp        exp log tanh sigmoid relu leaky_relu sqrt rsqrt square abs neg clamp
//   reduce.cpp       sum mean max over an axis (keepdim) or everything
//   matmul.cpp       2-D and batched products through cblas_sgemm
//   shape_ops.cpp    reshape transpose permute concat stack split slice
//   index_ops.cpp    index_select gather embedding
//   softmax.cpp      softmax log_softmax cross_entropy
//   mask_ops.cpp     masked_fill where dropout
//
// Every op checks its inputs and throws rg::Error naming the op and shapes.
// Ops record themselves on the thread's tape (autograd/tape.h) when any input
// requires a gradient and recording is on.
#include <cstdint>
#include <span>
#include <vector>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/autograd/var.h"
#include "rmsgrad/core/indices.h"
#include "rmsgrad/core/random.h"

namespace rg {

// Leaves.
inline Var constant(Tensor value) { return Var(std::move(value), false); }
inline Var parameter(Tensor value) { return Var(std::move(value), true); }

// ---- elementwise binary, broadcasting (elementwise.cpp) ----
Var add(const Var& a, const Var& b);
Var sub(const Var& a, const Var& b);
Var mul(const Var& a, const Var& b);
Var div(const Var& a, const Var& b);
Var maximum(const Var& a, const Var& b);  // the gradient goes to the larger; ties go to a
Var add(const Var& a, float s);
Var mul(const Var& a, float s);

inline Var operator+(const Var& a, const Var& b) { return add(a, b); }
inline Var operator-(const Var& a, const Var& b) { return sub(a, b); }
inline Var operator*(const Var& a, const Var& b) { return mul(a, b); }
inline Var operator/(const Var& a, const Var& b) { return div(a, b); }
inline Var operator+(const Var& a, float s) { return add(a, s); }
inline Var operator+(float s, const Var& a) { return add(a, s); }
inline Var operator-(const Var& a, float s) { return add(a, -s); }
inline Var operator*(const Var& a, float s) { return mul(a, s); }
inline Var operator*(float s, const Var& a) { return mul(a, s); }
inline Var operator/(const Var& a, float s) { return mul(a, 1.0f / s); }
inline Var operator/(float s, const Var& a) { return div(constant(Tensor::scalar(s)), a); }

// ---- elementwise unary (unary.cpp) ----
Var neg(const Var& x);
Var exp(const Var& x);
Var log(const Var& x);
Var tanh(const Var& x);
Var sigmoid(const Var& x);
Var relu(const Var& x);
Var leaky_relu(const Var& x, float slope = 0.01f);
Var sqrt(const Var& x);
Var rsqrt(const Var& x);  // 1 / sqrt(x)
Var square(const Var& x);
Var abs(const Var& x);    // d|x|/dx = sign(x), 0 at 0
Var clamp(const Var& x, float lo, float hi);  // gradient 1 inside [lo, hi], 0 outside
Var scalar_sub(float s, const Var& x);         // s - x
inline Var operator-(const Var& x) { return neg(x); }
inline Var operator-(float s, const Var& x) { return scalar_sub(s, x); }

// ---- reductions (reduce.cpp) ----
Var sum(const Var& x);  // all elements, a scalar
Var sum(const Var& x, int axis, bool keepdim = false);
Var mean(const Var& x);
Var mean(const Var& x, int axis, bool keepdim = false);
Var max(const Var& x, int axis, bool keepdim = false);  // gradient to the first maximum

// ---- matrix products (matmul.cpp) ----
// a [M, K] · b [K, N] → [M, N]; a [B, M, K] · b [B, K, N] → [B, M, N];
// a [..., M, K] · b [K, N] → [..., M, N] (one b for every batch item; trans_a
// is not allowed in this form).
// trans_a / trans_b multiply by the transpose of the operand as stored
// (a stored as [K, M] with trans_a), without copying it.
Var matmul(const Var& a, const Var& b, bool trans_a = false, bool trans_b = false);
// x [..., in] · weight [out, in]ᵀ + bias [out] → [..., out], a Linear layer's
// product and bias as one node (saves only x and the weight).
Var affine(const Var& x, const Var& weight, const Var& bias);

// ---- shapes (shape_ops.cpp) ----
Var reshape(const Var& x, const std::vector<int64_t>& dims);  // one dim may be -1
Var transpose(const Var& x, int axis0, int axis1);
Var permute(const Var& x, const std::vector<int>& order);     // out axis i = x axis order[i]
Var concat(const std::vector<Var>& xs, int axis);
Var stack(const std::vector<Var>& xs, int axis);              // new axis
std::vector<Var> split(const Var& x, const std::vector<int64_t>& sizes, int axis);
Var slice(const Var& x, int axis, int64_t start, int64_t end);  // [start, end)

// Walking a time-major sequence one step at a time, as every recurrent layer
// and decoder does: sequences are [T, B, N] and their masks [T, B].
// The [B, N] slice of step t of a [T, B, N] sequence (a view on the tape).
inline Var at_step(const Var& sequence, int64_t t) {
  return reshape(slice(sequence, 0, t, t + 1), {sequence.dim(1), sequence.dim(2)});
}
// Row t of a [T, B] mask as a [B] tensor; undefined stays undefined (no mask).
inline Tensor mask_at(const Tensor& mask, int64_t t) {
  if (!mask.defined()) return {};
  const int64_t batch = mask.dim(1);
  return Tensor::from(Shape{batch}, std::span<const float>(mask.data() + t * batch, batch));
}

// ---- indexing (index_ops.cpp) ----
// Integer index arrays (Indices, core/indices.h) for gather, embedding and targets.
// Rows (or slices along `axis`) picked by index, repeats allowed.
Var index_select(const Var& x, int axis, const std::vector<int32_t>& index);
// torch.gather: out[.., j, ..] = x[.., index[.., j, ..], ..] along `axis`;
// index has x's shape except along `axis`.
Var gather(const Var& x, int axis, const Indices& index);
// weight [V, E], ids of any shape → [ids..., E]. The backward adds into the
// rows of weight's gradient that were used, and touches no other row.
Var embedding(const Var& weight, const Indices& ids);

// ---- softmax and losses (softmax.cpp) ----
Var softmax(const Var& x, int axis = -1);
Var log_softmax(const Var& x, int axis = -1);

struct CrossEntropyOptions {
  int32_t ignore_index = -100;  // targets equal to this contribute nothing
  float label_smoothing = 0.0f; // ε: target distribution (1-ε)·onehot + ε/C
  // Optional per-row weights (e.g. a 0/1 padding mask), shape [N].
  Tensor row_weights;
  bool mean = true;  // divide by the total weight (rows counted); else the sum
};
// logits [N, C], targets [N] with values in [0, C) or ignore_index → scalar.
// Fused: softmax, log and the weighted sum in one pass, no [N, C] log-prob
// tensor kept for backward beyond the probabilities.
Var cross_entropy(const Var& logits, const Indices& targets, const CrossEntropyOptions& options = {});

// ---- masks and dropout (mask_ops.cpp) ----
// mask is a float tensor broadcastable to x; where it is non-zero the result
// is `value` (and the gradient there is 0).
Var masked_fill(const Var& x, const Tensor& mask, float value);
// condition (non-zero = take a) broadcastable to a's shape; a and b same shape.
Var where(const Tensor& condition, const Var& a, const Var& b);
// In training, zeroes each element with probability p and scales the rest by
// 1/(1-p); in evaluation returns x unchanged.
Var dropout(const Var& x, float p, bool training, Generator& gen, int batch_axis = 0);

}  // namespace rg
