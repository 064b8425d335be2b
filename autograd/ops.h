#pragma once
// The differentiable ops. Each family lives in its own file with forward and
// backward side by side:
//
//   elementwise.cpp  add sub mul div maximum, with NumPy broadcasting
//   unary.cpp        exp log tanh sigmoid relu leaky_relu sqrt rsqrt square abs neg clamp
//                    gelu silu swiglu softplus pow
//   reduce.cpp       sum mean over axes (keepdim) or everything; var std over axes;
//                    max min over an axis or everything; argmax argmin
//   matmul.cpp       2-D and batched products through core/gemm.h (oneDNN or OpenBLAS)
//   shape_ops.cpp    reshape transpose permute concat stack split slice squeeze unsqueeze flatten
//   index_ops.cpp    index_select gather embedding topk multinomial
//   softmax.cpp      softmax log_softmax cross_entropy
//   losses.cpp       mse_loss l1_loss huber_loss nll_loss binary_cross_entropy_with_logits
//   mask_ops.cpp     masked_fill where dropout relu_dropout
//
// Every op checks its inputs and throws rg::Error naming the op and shapes.
// Ops record themselves on the thread's tape (autograd/tape.h) when any input
// requires a gradient and recording is on.
#include <cstdint>
#include <initializer_list>
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
// x·Φ(x), Φ the standard normal CDF (torch's default); Tanh is torch's
// approximate='tanh', x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))/2.
enum class GeluApprox { None, Tanh };
Var gelu(const Var& x, GeluApprox approximate = GeluApprox::None);
Var silu(const Var& x);  // x·sigmoid(x)
// silu(a)·b elementwise, a and b of one shape: LLaMA's gated feed-forward
// (silu of the gate projection times the up projection), in one pass.
Var swiglu(const Var& a, const Var& b);
// log(1 + e^(β·x))/β, and x itself where β·x > threshold (torch's semantics:
// the gradient there is exactly 1). β may be negative, not 0.
Var softplus(const Var& x, float beta = 1.0f, float threshold = 20.0f);
// x^p elementwise; the gradient p·x^(p−1) is 0 everywhere when p = 0, and
// follows IEEE pow elsewhere (inf at x = 0 for p < 1, NaN for x < 0 and a
// fractional p), as torch's.
Var pow(const Var& x, float exponent);
inline Var operator-(const Var& x) { return neg(x); }
inline Var operator-(float s, const Var& x) { return scalar_sub(s, x); }

// ---- reductions (reduce.cpp) ----
Var sum(const Var& x);  // all elements, a scalar
Var sum(const Var& x, int axis, bool keepdim = false);
Var mean(const Var& x);
Var mean(const Var& x, int axis, bool keepdim = false);
// Several axes at once, each listed at most once; an empty list reduces every
// axis (torch's dim=[]). The braced forms exist so that sum(x, {}) means the
// empty list rather than axis 0.
Var sum(const Var& x, const std::vector<int>& axes, bool keepdim = false);
Var mean(const Var& x, const std::vector<int>& axes, bool keepdim = false);
inline Var sum(const Var& x, std::initializer_list<int> axes, bool keepdim = false) {
  return sum(x, std::vector<int>(axes), keepdim);
}
inline Var mean(const Var& x, std::initializer_list<int> axes, bool keepdim = false) {
  return mean(x, std::vector<int>(axes), keepdim);
}
// torch.var / torch.std: Σ (x − mean)² / (n − correction) over the n reduced
// elements (correction 1: Bessel's unbiased estimate, 0: the population
// variance). n − correction ≤ 0 is an error (torch gives inf or NaN). The
// gradient of std is 0 where std is 0, as torch's. Call it rg::std: under
// `using namespace rg` a bare std(...) is ambiguous with the namespace std.
Var var(const Var& x, int axis, int correction = 1, bool keepdim = false);
Var var(const Var& x, const std::vector<int>& axes, int correction = 1, bool keepdim = false);
Var std(const Var& x, int axis, int correction = 1, bool keepdim = false);
Var std(const Var& x, const std::vector<int>& axes, int correction = 1, bool keepdim = false);
inline Var var(const Var& x, std::initializer_list<int> axes, int correction = 1, bool keepdim = false) {
  return var(x, std::vector<int>(axes), correction, keepdim);
}
inline Var std(const Var& x, std::initializer_list<int> axes, int correction = 1, bool keepdim = false) {
  return std(x, std::vector<int>(axes), correction, keepdim);
}
// Along an axis the gradient goes to the first maximum (minimum). NaN counts
// as larger and smaller than every number, so it propagates, as in torch.
Var max(const Var& x, int axis, bool keepdim = false);
Var min(const Var& x, int axis, bool keepdim = false);
// Over every element, a scalar. The gradient is shared evenly by all the
// elements equal to the result, as torch's max() and min() do.
Var max(const Var& x);
Var min(const Var& x);
// The position of the first maximum (minimum) along the axis, as max and min
// choose it; not differentiable.
Indices argmax(const Var& x, int axis, bool keepdim = false);
Indices argmin(const Var& x, int axis, bool keepdim = false);

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
// Views of the same values (reshapes on the tape), as torch's:
// squeeze removes `axis` when its size is 1 and otherwise returns x's shape
// unchanged (torch keeps an axis of another size silently, it does not throw);
// unsqueeze inserts a size-1 axis before position `axis` of the result
// (axis in [−rank − 1, rank]); flatten merges axes start..end, both included
// (a scalar becomes [1]).
Var squeeze(const Var& x, int axis);
Var unsqueeze(const Var& x, int axis);
Var flatten(const Var& x, int start_axis = 0, int end_axis = -1);

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
// torch.topk: the k largest (or smallest) values along `axis`, sorted (largest
// first, or smallest first), with their positions. The gradient of `values`
// goes back to those positions. Equal values come in the order of their
// positions; NaN counts as larger than every number.
struct TopK {
  Var values;       // x's shape with k along the axis
  Indices indices;  // the same shape
};
TopK topk(const Var& x, int64_t k, int axis = -1, bool largest = true);
// torch.multinomial: `samples` category indices drawn from each row of
// non-negative weights probs [N, C] (or [C]), in proportion to them (they need
// not sum to 1) → [N, samples] (or [samples]). Without replacement a category
// is drawn at most once per row, so a row needs `samples` non-zero weights.
// Negative, infinite or NaN weights and all-zero rows are errors.
Indices multinomial(const Tensor& probs, int64_t samples, bool replacement, Generator& gen);

// ---- softmax and cross-entropy (softmax.cpp) ----
Var softmax(const Var& x, int axis = -1);
Var log_softmax(const Var& x, int axis = -1);

struct CrossEntropyOptions {
  int32_t ignore_index = -100;  // targets equal to this contribute nothing
  float label_smoothing = 0.0f; // ε: target distribution (1-ε)·onehot + ε/C
  // Optional per-row weights (e.g. a 0/1 padding mask), shape [N].
  Tensor row_weights{};
  bool mean = true;  // divide by the total weight (rows counted); else the sum
};
// logits [N, C], targets [N] with values in [0, C) or ignore_index → scalar.
// Fused: softmax, log and the weighted sum in one pass, no [N, C] log-prob
// tensor kept for backward beyond the probabilities.
// As in torch, logits may also be [N, C, d1, ...] with targets (and row
// weights) [N, d1, ...]: every position is a row, C is the class axis, and the
// mean is over all of them.
Var cross_entropy(const Var& logits, const Indices& targets, const CrossEntropyOptions& options = {});

// ---- losses (losses.cpp) ----
// How a loss reduces its elements: their mean, their sum, or none (the
// elementwise losses, in the input's shape).
enum class Reduction { Mean, Sum, None };
// Elementwise on input − target (same shapes), both differentiable, as torch's:
//   mse    (x − t)²
//   l1     |x − t|                      (gradient 0 where x = t)
//   huber  (x − t)²/2 where |x − t| < δ, else δ·(|x − t| − δ/2);  δ > 0
Var mse_loss(const Var& input, const Var& target, Reduction reduction = Reduction::Mean);
Var l1_loss(const Var& input, const Var& target, Reduction reduction = Reduction::Mean);
Var huber_loss(const Var& input, const Var& target, float delta = 1.0f, Reduction reduction = Reduction::Mean);
// −log_probs[n, t_n] for log_probs [N, C] (or [N, C, d1, ...]) and targets [N]
// (or [N, d1, ...]); targets equal to ignore_index contribute 0 and are not
// counted by the mean. If every target is ignored the mean is 0 (torch gives
// NaN), as in cross_entropy.
Var nll_loss(const Var& log_probs, const Indices& targets, int32_t ignore_index = -100,
             Reduction reduction = Reduction::Mean);
// −[p·t·log σ(x) + (1 − t)·log(1 − σ(x))] for logits x and targets t of the
// same shape, computed as p·t·softplus(−x) + (1 − t)·softplus(x), which
// neither overflows nor cancels. pos_weight p (the weight of the positive
// term) broadcasts to the logits' shape, e.g. [C]; undefined means 1. It is a
// constant; logits and targets both get gradients.
Var binary_cross_entropy_with_logits(const Var& logits, const Var& targets, Reduction reduction = Reduction::Mean,
                                     const Tensor& pos_weight = {});

// ---- masks and dropout (mask_ops.cpp) ----
// mask is a float tensor broadcastable to x; where it is non-zero the result
// is `value` (and the gradient there is 0).
Var masked_fill(const Var& x, const Tensor& mask, float value);
// condition (non-zero = take a) broadcastable to a's shape; a and b same shape.
Var where(const Tensor& condition, const Var& a, const Var& b);
// In training, zeroes each element with probability p and scales the rest by
// 1/(1-p); in evaluation returns x unchanged.
Var dropout(const Var& x, float p, bool training, Generator& gen, int batch_axis = 0);
// dropout(relu(x)) in one pass, the same draws; in evaluation relu(x).
Var relu_dropout(const Var& x, float p, bool training, Generator& gen, int batch_axis = 0);

}  // namespace rg
