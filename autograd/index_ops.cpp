// Indexing ops: pick values by integer index. Backward scatters the gradient
// back to where each value came from, adding when an index repeats.
//
//   index_select  out[.., j, ..] = x[.., index[j], ..]        dx[.., index[j], ..] += g[.., j, ..]
//   gather        out[o, j, i] = x[o, index[o, j, i], i]      dx[o, index[o, j, i], i] += g[o, j, i]
//   embedding     out[t, :] = W[id_t, :]                      dW[id_t, :] += g[t, :]
//
// x is viewed as [outer, D, inner] around the indexed axis. The embedding
// backward touches only the rows that were looked up: with a vocabulary of
// 30k and a batch of 2k tokens, that is 2k row additions, not a 30k×E pass.
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

void check_range(const char* op, const std::vector<int32_t>& index, int64_t len, const Shape& x) {
  for (size_t i = 0; i < index.size(); ++i)
    check(index[i] >= 0 && index[i] < len, "{}: index {} at position {} is out of range [0, {}) for {}", op,
          index[i], i, len, x);
}

}  // namespace

Var index_select(const Var& x, int axis, const std::vector<int32_t>& index) {
  check(x.defined(), "index_select: undefined input");
  check(x.rank() >= 1, "index_select: cannot index a scalar");
  int a = x.shape().normalize_axis(axis);
  const int64_t outer = x.shape().outer(a), len = x.shape()[a], inner = x.shape().inner(a);
  check_range("index_select", index, len, x.shape());
  const int64_t count = static_cast<int64_t>(index.size());
  Tensor out = Tensor::empty(x.shape().with(a, count));
  const float* px = x.value().data();
  float* po = out.data();
  parallel_for(outer * count, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(inner, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) {
                   int64_t o = r / count, j = r % count;
                   std::copy_n(px + (o * len + index[j]) * inner, inner, po + r * inner);
                 }
               });
  return tape().record("index_select", std::move(out), {x}, [index, outer, len, inner](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const int64_t count = static_cast<int64_t>(index.size());
    const float* g = n.grad.data();
    float* d = dx->data();
    // Serial over j: repeated indices add into the same slice.
    parallel_for(outer, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o)
        for (int64_t j = 0; j < count; ++j) {
          float* dst = d + (o * len + index[j]) * inner;
          const float* src = g + (o * count + j) * inner;
          for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
        }
    });
  });
}

Var gather(const Var& x, int axis, const Indices& index) {
  check(x.defined(), "gather: undefined input");
  check(x.rank() >= 1 && index.shape.rank() == x.rank(), "gather: index shape {} must have the rank of {}",
        index.shape, x.shape());
  int a = x.shape().normalize_axis(axis);
  for (int i = 0; i < x.rank(); ++i)
    check(i == a || index.shape[i] == x.shape()[i], "gather: index shape {} differs from {} outside axis {}",
          index.shape, x.shape(), axis);
  const int64_t outer = x.shape().outer(a), len = x.shape()[a], inner = x.shape().inner(a);
  const int64_t count = index.shape[a];
  check_range("gather", index.values, len, x.shape());
  Tensor out = Tensor::empty(index.shape);
  const float* px = x.value().data();
  float* po = out.data();
  const int32_t* pi = index.values.data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t k = (o * count + j) * inner + i;
        po[k] = px[(o * len + pi[k]) * inner + i];
      }
  return tape().record("gather", std::move(out), {x}, [values = index.values, outer, len, inner, count](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float* g = n.grad.data();
    float* d = dx->data();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < count; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t k = (o * count + j) * inner + i;
          d[(o * len + values[k]) * inner + i] += g[k];
        }
  });
}

Var embedding(const Var& weight, const Indices& ids) {
  check(weight.defined(), "embedding: undefined weight");
  check(weight.rank() == 2, "embedding: weight must be [V, E], got {}", weight.shape());
  const int64_t vocab = weight.dim(0), width = weight.dim(1);
  check_range("embedding", ids.values, vocab, weight.shape());
  std::vector<int64_t> dims = ids.shape.dims();
  dims.push_back(width);
  Tensor out = Tensor::empty(Shape(dims));
  const float* pw = weight.value().data();
  float* po = out.data();
  const int64_t count = static_cast<int64_t>(ids.values.size());
  parallel_for(count, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(width, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) std::copy_n(pw + ids.values[t] * width, width, po + t * width);
  });
  return tape().record("embedding", std::move(out), {weight}, [values = ids.values, width](Node& n) {
    Tensor* dw = n.input_grad(0);
    if (!dw) return;
    const float* g = n.grad.data();
    float* d = dw->data();
    for (size_t t = 0; t < values.size(); ++t) {
      float* row = d + values[t] * width;
      const float* src = g + t * width;
      for (int64_t e = 0; e < width; ++e) row[e] += src[e];
    }
  });
}

}  // namespace rg
