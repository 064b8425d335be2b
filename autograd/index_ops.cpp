// Indexing ops: pick values by integer index. Backward scatters the gradient
// back to where each value came from, adding when an index repeats.
//
//   index_select  out[.., j, ..] = x[.., index[j], ..]        dx[.., index[j], ..] += g[.., j, ..]
//   gather        out[o, j, i] = x[o, index[o, j, i], i]      dx[o, index[o, j, i], i] += g[o, j, i]
//   embedding     out[t, :] = W[id_t, :]                      dW[id_t, :] += g[t, :]
//
//   topk          out[o, j, i] = x[o, p_j, i], p_1 … p_k the positions of the k largest (smallest), in order
//                                                          dx[o, p_j, i] += g[o, j, i]
//
// x is viewed as [outer, D, inner] around the indexed axis. The embedding
// backward touches only the rows that were looked up: with a vocabulary of
// 30k and a batch of 2k tokens, that is 2k row additions, not a 30k×E pass.
//
// multinomial draws indices and has no gradient. With replacement, each draw
// inverts a row's cumulative sum: u uniform in [0, 1), the category is the
// first c with Σ_{c' ≤ c} w_c' > u·Σ w. Without replacement it runs the
// exponential race: every category gets an arrival time E_c / w_c with
// E_c ~ Exp(1), i.e. an exponential with rate w_c. The first to arrive is c
// with probability w_c / Σ w and, the exponential having no memory, the
// others then race on as if c had never been there: the order of arrival is
// exactly sequential drawing without replacement, and the first `samples` to
// arrive are the draws. (torch.multinomial samples the same way.)
#include <algorithm>
#include <cmath>
#include <numeric>

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

namespace {

// The order topk sorts by: larger (smaller) first, NaN above every number
// (so largest picks it first, smallest last), equal values by position.
struct TopKOrder {
  const float* col;
  int64_t stride;
  bool largest;
  bool operator()(int32_t a, int32_t b) const {
    const float u = col[a * stride], v = col[b * stride];
    return above(u, v) || (!above(v, u) && a < b);
  }
  bool above(float u, float v) const {  // u comes before v
    if (u != u || v != v) return largest ? (u != u && v == v) : (u == u && v != v);
    return largest ? u > v : u < v;
  }
};

}  // namespace

TopK topk(const Var& x, int64_t k, int axis, bool largest) {
  check(x.defined(), "topk: undefined input");
  check(x.rank() >= 1, "topk: cannot pick along an axis of a scalar");
  check(axis >= -x.rank() && axis < x.rank(), "topk: axis {} is out of range for {}", axis, x.shape());
  int a = x.shape().normalize_axis(axis);
  const int64_t outer = x.shape().outer(a), len = x.shape()[a], inner = x.shape().inner(a);
  check(k >= 0 && k <= len, "topk: k = {} is not in [0, {}] for axis {} of {}", k, len, axis, x.shape());
  const Shape out_shape = x.shape().with(a, k);
  Tensor out = Tensor::empty(out_shape);
  std::vector<int32_t> picks(out_shape.numel());
  const float* px = x.value().data();
  float* po = out.data();
  parallel_for(outer * inner, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(len, 1)),
               [&](int64_t lo, int64_t hi) {
                 std::vector<int32_t> order(len);
                 for (int64_t c = lo; c < hi; ++c) {
                   const int64_t o = c / inner, i = c % inner;
                   const float* col = px + o * len * inner + i;
                   std::iota(order.begin(), order.end(), 0);
                   std::partial_sort(order.begin(), order.begin() + k, order.end(), TopKOrder{col, inner, largest});
                   for (int64_t j = 0; j < k; ++j) {
                     po[(o * k + j) * inner + i] = col[order[j] * inner];
                     picks[(o * k + j) * inner + i] = order[j];
                   }
                 }
               });
  Indices indices(out_shape, picks);
  Var values = tape().record("topk", std::move(out), {x}, [picks = std::move(picks), len, k, inner](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float* g = n.grad.data();
    float* d = dx->data();
    // The k positions of a column are distinct, so columns can go in parallel.
    parallel_for(static_cast<int64_t>(picks.size()), kGrainElementwise, [&](int64_t lo, int64_t hi) {
      for (int64_t q = lo; q < hi; ++q) {
        const int64_t o = q / (k * inner), i = q % inner;
        d[(o * len + picks[q]) * inner + i] += g[q];
      }
    });
  });
  return {std::move(values), std::move(indices)};
}

Indices multinomial(const Tensor& probs, int64_t samples, bool replacement, Generator& gen) {
  check(probs.defined(), "multinomial: undefined probs");
  check(probs.rank() == 1 || probs.rank() == 2, "multinomial: probs must be [C] or [N, C], got {}", probs.shape());
  const int64_t rows = probs.rank() == 2 ? probs.dim(0) : 1, classes = probs.shape()[-1];
  check(classes > 0, "multinomial: probs {} have no categories", probs.shape());
  check(samples > 0, "multinomial: the number of samples must be positive, got {}", samples);
  check(replacement || samples <= classes,
        "multinomial: cannot draw {} samples without replacement from {} categories", samples, classes);
  const float* w = probs.data();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t nonzero = 0;
    for (int64_t c = 0; c < classes; ++c) {
      const float v = w[r * classes + c];
      check(std::isfinite(v) && v >= 0.0f, "multinomial: weight {} at [{}, {}] of probs {} is negative or not finite",
            v, r, c, probs.shape());
      nonzero += v > 0.0f;
    }
    check(nonzero > 0, "multinomial: row {} of probs {} is all zeros", r, probs.shape());
    check(replacement || nonzero >= samples,
          "multinomial: row {} of probs {} has {} non-zero weights, too few to draw {} without replacement", r,
          probs.shape(), nonzero, samples);
  }
  // Uniform draws with 53 random bits: in [0, 1), or with `open` in (0, 1].
  auto unit = [&gen](uint64_t index, bool open) {
    return (static_cast<double>(gen.bits_at(index) >> 11) + (open ? 1.0 : 0.0)) * 0x1.0p-53;
  };
  std::vector<int32_t> drawn(rows * samples);
  if (replacement) {
    const uint64_t first = gen.reserve(rows * samples);
    std::vector<double> cdf(classes);
    for (int64_t r = 0; r < rows; ++r) {
      double total = 0.0;
      for (int64_t c = 0; c < classes; ++c) cdf[c] = total += w[r * classes + c];
      // The last category with a weight (the first whose sum is the total),
      // for when u·total rounds up to the total itself.
      int64_t last = classes - 1;
      while (last > 0 && cdf[last - 1] == total) --last;
      for (int64_t s = 0; s < samples; ++s) {
        const double target = unit(first + r * samples + s, false) * total;
        const int64_t c = std::upper_bound(cdf.begin(), cdf.end(), target) - cdf.begin();
        drawn[r * samples + s] = static_cast<int32_t>(std::min(c, last));
      }
    }
  } else {
    const uint64_t first = gen.reserve(rows * classes);
    std::vector<double> key(classes);
    std::vector<int32_t> order(classes);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < classes; ++c) {  // w / E, the larger the earlier; weight 0 never arrives
        const double weight = w[r * classes + c];
        key[c] = weight > 0.0 ? weight / -std::log(unit(first + r * classes + c, true)) : -1.0;
      }
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + samples, order.end(),
                        [&key](int32_t a, int32_t b) { return key[a] > key[b] || (key[a] == key[b] && a < b); });
      std::copy_n(order.begin(), samples, drawn.begin() + r * samples);
    }
  }
  return Indices(probs.rank() == 2 ? Shape{rows, samples} : Shape{samples}, std::move(drawn));
}

}  // namespace rg
