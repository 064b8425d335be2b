// Fused ops of attention; see attention_ops.h.
//
//   add_tanh      y = tanh(a + b)             dz = g · (1 − y²)
//                                             da += Σ_broadcast dz,  db += Σ_broadcast dz
//                 (one pass each way when one input is a row repeated down the other)
//   weighted_sum  y[b, c] = Σ_s w[s, b] v[s, b, c]
//                                             dv[s, b, c] += g[b, c] · w[s, b]
//                                             dw[s, b]    += Σ_c g[b, c] · v[s, b, c]
//   AttentionValues::gathered                 dv of every weighted_sum step over it, in one pass
//   bahdanau_weights                          see the header; one batch item's S positions a task
//
// Saved for backward: add_tanh keeps y (its own value), weighted_sum only its
// inputs, which the attention keeps anyway (the context for every step, the
// weights as the softmax's output). Every product is rounded to float before
// it is summed, in the same order as the composed ops (sum over axis 0, then
// the broadcast reduction, which sums a row in 16 lanes: core/reduce_row.h),
// so the fused ops give the same bits as tanh(a + b) and sum(w ⊙ v, 0).
#include "rmsgrad/autograd/attention_ops.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "rmsgrad/autograd/row_norms.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/broadcast.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/fast_math.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/reduce_row.h"

namespace rg {

namespace {

// True when `small` broadcasts to `full` by repeating along leading axes only:
// without its leading 1s, small's shape is the tail of full's. Then element i
// of full meets element i % small.numel() of small, as a bias row meets the
// rows of a matrix: the attention's query [1, B, A] against its keys [S, B, A].
bool broadcasts_as_suffix(const Shape& small, const Shape& full) {
  int first = 0;
  while (first < small.rank() && small[first] == 1) ++first;
  const int kept = small.rank() - first;
  if (kept > full.rank()) return false;
  for (int i = 0; i < kept; ++i)
    if (small[first + i] != full[full.rank() - kept + i]) return false;
  return true;
}

// The same backward in one pass when input `row` broadcasts as a suffix of
// input `whole` (which has y's shape): per element dz = g·(1 − y²) goes
// straight into d_whole, and into d_row's column sum, without a dz tensor.
// Columns are split over threads, one wide block each, walked row by row:
// a few long streams the prefetcher follows (narrow blocks would make it
// follow dozens of short ones, rows apart). Each column sums its rows in
// order, from 0 (a fresh gradient) or from what was there, as the composed
// add's backward does (accumulate_reduced), so the bits are the same.
void add_tanh_backward_rows(Node& n, size_t whole, size_t row) {
  bool fresh_whole = false, fresh_row = false;
  Tensor* d_whole = n.input_grad(whole, fresh_whole);
  Tensor* d_row = n.input_grad(row, fresh_row);
  const int64_t inner = n.inputs[row]->value.numel(), rows = n.value.numel() / std::max<int64_t>(inner, 1);
  const float *pg = n.grad.data(), *pv = n.value.data();
  float* pw = d_whole ? d_whole->data() : nullptr;
  float* pr = d_row ? d_row->data() : nullptr;
  const int64_t block = std::max<int64_t>(256, (inner + num_threads() - 1) / num_threads());
  // One loop per case, chosen here rather than tested per element.
  auto pass = [&](auto to_whole, auto assign_whole, auto to_row) {
    parallel_for(inner, block, [&](int64_t lo, int64_t hi) {
      if (to_row && fresh_row)
        for (int64_t j = lo; j < hi; ++j) pr[j] = 0.0f;
      for (int64_t r = 0; r < rows; ++r) {
        const float *g = pg + r * inner, *y = pv + r * inner;
        float* w = to_whole ? pw + r * inner : nullptr;
#pragma omp simd
        for (int64_t j = lo; j < hi; ++j) {
          const float dz = g[j] * (1.0f - y[j] * y[j]);
          if constexpr (to_whole) {
            if constexpr (assign_whole) w[j] = dz;
            else w[j] += dz;
          }
          if constexpr (to_row) pr[j] += dz;
        }
      }
    });
  };
  using yes = std::true_type;
  using no = std::false_type;
  if (pw && pr) fresh_whole ? pass(yes{}, yes{}, yes{}) : pass(yes{}, no{}, yes{});
  else if (pw) fresh_whole ? pass(yes{}, yes{}, no{}) : pass(yes{}, no{}, no{});
  else if (pr) pass(no{}, no{}, yes{});
}

}  // namespace

Var add_tanh(const Var& a, const Var& b) {
  check(a.defined() && b.defined(), "add_tanh: undefined input");
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), "add_tanh");
  Tensor y = Tensor::empty(shape);
  float* py = y.data();
  // The attention's case, one input a row repeated down the other: one pass,
  // y = tanh(whole + row), with no index arithmetic per element.
  const bool a_whole = a.shape() == shape && broadcasts_as_suffix(b.shape(), shape);
  const bool b_whole = !a_whole && b.shape() == shape && broadcasts_as_suffix(a.shape(), shape);
  if (a_whole || b_whole) {
    const size_t whole = a_whole ? 0 : 1;
    const float* pw = (a_whole ? a : b).value().data();
    const float* pr = (a_whole ? b : a).value().data();
    const int64_t inner = (a_whole ? b : a).numel(), rows = y.numel() / std::max<int64_t>(inner, 1);
    parallel_for(rows, std::max<int64_t>(1, kGrainHeavy / std::max<int64_t>(inner, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float* w = pw + r * inner;
        float* out = py + r * inner;
        // a + b in the inputs' order: float addition commutes exactly.
#pragma omp simd
        for (int64_t j = 0; j < inner; ++j) out[j] = fast_tanh(w[j] + pr[j]);
      }
    });
    return tape().record("add_tanh", std::move(y), {a, b},
                         [whole](Node& n) { add_tanh_backward_rows(n, whole, 1 - whole); });
  }
  broadcast_binary(a.value(), b.value(), y, [](float p, float q) { return p + q; });
  parallel_for(y.numel(), kGrainHeavy, [&](int64_t lo, int64_t hi) {
    float* out = py;
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) out[i] = fast_tanh(out[i]);
  });
  return tape().record("add_tanh", std::move(y), {a, b}, [](Node& n) {
    // dz = g · (1 − y²), the gradient of the sum a + b.
    Tensor dz = Tensor::empty(n.value.shape());
    const float *pg = n.grad.data(), *pv = n.value.data();
    float* pd = dz.data();
    parallel_for(dz.numel(), kGrainHeavy, [&](int64_t lo, int64_t hi) {
      const float *g = pg, *y = pv;
      float* d = pd;
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) d[i] = g[i] * (1.0f - y[i] * y[i]);
    });
    for (size_t k = 0; k < 2; ++k) {
      bool fresh = false;
      Tensor* dx = n.input_grad(k, fresh);
      if (!dx) continue;
      if (dx->shape() == dz.shape()) {
        if (fresh) dx->copy_from(dz);
        else dx->add_(dz);
      } else {  // broadcast input: sum dz over the axes it was repeated along
        if (fresh) dx->fill(0.0f);
        accumulate_reduced(*dx, dz);
      }
    }
  });
}

// What a gathered node collects from the weighted sums over it, in the order
// their backward ran: each step's g [B, C] and weights [S, B].
struct AttentionValues::StepGradients {
  struct Step {
    Tensor g, w;
  };
  std::vector<Step> steps;
};

namespace {

// weighted_sum's forward and backward; with `gathered`, the values' gradient
// is left to the gathered node, which is given this step's g and weights.
Var record_weighted_sum(const Var& weights, const Var& values,
                        std::shared_ptr<AttentionValues::StepGradients> gathered) {
  check(weights.defined() && values.defined(), "weighted_sum: undefined input");
  check(values.rank() == 3 && weights.shape() == Shape{values.dim(0), values.dim(1)},
        "weighted_sum: weights {} must be [S, B] for values {} [S, B, C]", weights.shape(), values.shape());
  const int64_t steps = values.dim(0), batch = values.dim(1), width = values.dim(2);
  Tensor y = Tensor::zeros(Shape{batch, width});
  const float *pw = weights.value().data(), *pv = values.value().data();
  float* py = y.data();
  // One batch item per task: y[b] = Σ_s (w[s, b] · v[s, b]), each product rounded first.
  parallel_for(batch, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, steps * width)),
               [&](int64_t lo, int64_t hi) {
                 std::vector<float> product(static_cast<size_t>(width));
                 for (int64_t b = lo; b < hi; ++b) {
                   float* row = py + b * width;
                   for (int64_t s = 0; s < steps; ++s) {
                     const float w = pw[s * batch + b];
                     const float* v = pv + (s * batch + b) * width;
                     for (int64_t c = 0; c < width; ++c) product[c] = w * v[c];
                     for (int64_t c = 0; c < width; ++c) row[c] += product[c];
                   }
                 }
               });
  return tape().record("weighted_sum", std::move(y), {weights, values}, [steps, batch, width, gathered](Node& n) {
    bool fresh_w = false, fresh_v = false;
    Tensor* dw = n.input_grad(0, fresh_w);
    Tensor* dv = nullptr;
    if (!gathered) {
      dv = n.input_grad(1, fresh_v);
    } else if (n.input_grad(1)) {  // (zero-filled once: the gathered node is reached, so its backward runs)
      gathered->steps.push_back({n.grad.clone(), n.inputs[0]->value.clone()});
    }
    const float *pg = n.grad.data(), *pw = n.inputs[0]->value.data(), *pv = n.inputs[1]->value.data();
    float* pdw = dw ? dw->data() : nullptr;
    float* pdv = dv ? dv->data() : nullptr;
    parallel_for(batch, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(1, steps * width)),
                 [&](int64_t lo, int64_t hi) {
                   std::vector<float> product(static_cast<size_t>(width));
                   for (int64_t b = lo; b < hi; ++b) {
                     const float* g = pg + b * width;
                     for (int64_t s = 0; s < steps; ++s) {
                       const int64_t at = s * batch + b;
                       if (pdv) {  // dv[s, b] += g[b] · w[s, b]
                         const float w = pw[at];
                         float* d = pdv + at * width;
                         for (int64_t c = 0; c < width; ++c) product[c] = g[c] * w;
                         if (fresh_v)
                           for (int64_t c = 0; c < width; ++c) d[c] = product[c];
                         else
                           for (int64_t c = 0; c < width; ++c) d[c] += product[c];
                       }
                       if (pdw) {  // dw[s, b] += Σ_c g[b, c] · v[s, b, c]
                         const float* v = pv + at * width;
                         for (int64_t c = 0; c < width; ++c) product[c] = g[c] * v[c];
                         const float acc = sum_of(product.data(), width);  // in lanes, as accumulate_reduced
                         pdw[at] = fresh_w ? acc : pdw[at] + acc;
                       }
                     }
                   }
                 });
  });
}

}  // namespace

Var weighted_sum(const Var& weights, const Var& values) { return record_weighted_sum(weights, values, nullptr); }

AttentionValues::AttentionValues(const Var& values) : values_(values) {}

AttentionValues::AttentionValues(Var values, std::shared_ptr<StepGradients> steps)
    : values_(std::move(values)), steps_(std::move(steps)) {}

Var AttentionValues::weighted_sum(const Var& weights) const { return record_weighted_sum(weights, values_, steps_); }

AttentionValues AttentionValues::gathered(const Var& values) {
  check(values.defined() && values.rank() == 3, "AttentionValues::gathered: values {} must be [S, B, C]",
        shape_of(values));
  auto collected = std::make_shared<StepGradients>();
  Var node = tape().record("attention_values", values.value(), {values}, [collected](Node& n) {
    // Taken out: a second backward over a kept graph brings its own steps.
    const std::vector<StepGradients::Step> steps = std::exchange(collected->steps, {});
    bool fresh = false;
    Tensor* dx = n.input_grad(0, fresh);
    if (!dx) return;
    const int64_t positions = n.value.dim(0), batch = n.value.dim(1), width = n.value.dim(2);
    const float* own = n.grad.data();  // zeros, or what other ops added
    float* pd = dx->data();
    // dv[s, b] = Σ_steps g[b] · w[s, b], in the order the steps ran backward,
    // each product rounded before it is added, as weighted_sum would have.
    parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
      std::vector<float> product(static_cast<size_t>(width)), acc(static_cast<size_t>(width));
      for (int64_t b = lo; b < hi; ++b) {
        for (int64_t s = 0; s < positions; ++s) {
          const int64_t at = s * batch + b;
          std::copy_n(own + at * width, width, acc.data());
          for (const StepGradients::Step& step : steps) {
            const float w = step.w.data()[at];
            const float* g = step.g.data() + b * width;
            for (int64_t c = 0; c < width; ++c) product[c] = g[c] * w;
            for (int64_t c = 0; c < width; ++c) acc[c] += product[c];
          }
          float* d = pd + at * width;
          if (fresh) std::copy_n(acc.data(), width, d);
          else
            for (int64_t c = 0; c < width; ++c) d[c] += acc[c];
        }
      }
    });
  });
  // Without a graph (no gradient needed, or no recording) the steps are plain weighted sums.
  return AttentionValues(node, node.requires_grad() ? collected : nullptr);
}

Var attention_softmax(const Var& scores, float scale, const Tensor& key_mask, bool causal) {
  check(scores.defined() && scores.rank() == 4, "attention_softmax: scores {} must be [B, H, Tq, Tk]",
        shape_of(scores));
  const int64_t batch = scores.dim(0), heads = scores.dim(1), tq = scores.dim(2), tk = scores.dim(3);
  check(!key_mask.defined() || key_mask.shape() == Shape{batch, tk}, "attention_softmax: key mask {} must be [{}, {}]",
        shape_of(key_mask), batch, tk);
  check(!causal || tq == tk, "attention_softmax: a causal mask needs as many queries as keys, got {} and {}", tq, tk);
  const float* mask = key_mask.defined() ? key_mask.data() : nullptr;
  // Every query must see a key. Causal: query 0 sees key 0 alone, and every
  // later query sees key 0 too, so key 0 must be real. Otherwise any real key will do.
  for (int64_t b = 0; b < batch && mask; ++b) {
    bool any = causal ? mask[b * tk] != 0.0f : false;
    for (int64_t j = 0; j < tk && !causal && !any; ++j) any = mask[b * tk + j] != 0.0f;
    check(any, "attention_softmax: a query of batch item {} can see no key (key mask {}{})", b, key_mask.shape(),
          causal ? ", causal: its first key is masked" : "");
  }
  Tensor y = Tensor::empty(scores.shape());
  const float* px = scores.value().data();
  float* py = y.data();
  // One row (b, h, i) per task: the visible keys are j < limit(i) with
  // mask[b, j] ≠ 0. Each pass over a row is branch-free, so it vectorises:
  // the largest visible score, e = exp(s − top) where visible and 0 elsewhere
  // (a hidden key's exp is computed from its score and dropped), the sum,
  // the division.
  auto softmax_row = [scale](const float* x, const float* m, float* out, int64_t limit, int64_t tk) {
    const float top = m ? lane_max(limit, [&](int64_t j) { return branchless_select(m[j] != 0.0f, scale * x[j], -INFINITY); })
                        : lane_max(limit, [&](int64_t j) { return scale * x[j]; });
    if (m)
      for (int64_t j = 0; j < limit; ++j) out[j] = branchless_select(m[j] != 0.0f, fast_exp(scale * x[j] - top), 0.0f);
    else
      for (int64_t j = 0; j < limit; ++j) out[j] = fast_exp(scale * x[j] - top);
    const float inv = 1.0f / sum_of(out, limit);
    for (int64_t j = 0; j < limit; ++j) out[j] *= inv;
    for (int64_t j = limit; j < tk; ++j) out[j] = 0.0f;
  };
  parallel_for(batch * heads * tq, std::max<int64_t>(1, kGrainHeavy / std::max<int64_t>(tk, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) {
                   const int64_t b = r / (heads * tq), i = r % tq;
                   softmax_row(px + r * tk, mask ? mask + b * tk : nullptr, py + r * tk, causal ? i + 1 : tk, tk);
                 }
               });
  return tape().record("attention_softmax", std::move(y), {scores}, [scale, tk](Node& n) {
    bool fresh = false;
    Tensor* dx = n.input_grad(0, fresh);
    if (!dx) return;
    const float *pa = n.value.data(), *pg = n.grad.data();
    float* pd = dx->data();
    const int64_t rows = n.value.numel() / tk;
    parallel_for(rows, std::max<int64_t>(1, kGrainElementwise / std::max<int64_t>(tk, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) {
                     const float *a = pa + r * tk, *g = pg + r * tk;
                     float* d = pd + r * tk;
                     const float dot = rg::dot(g, a, tk);
                     if (fresh)
                       for (int64_t j = 0; j < tk; ++j) d[j] = scale * a[j] * (g[j] - dot);
                     else
                       for (int64_t j = 0; j < tk; ++j) d[j] += scale * a[j] * (g[j] - dot);
                   }
                 });
  });
}

Var bahdanau_weights(const Var& projected, const Var& state_term, const RowNorm& norm_state,
                     const Var& score_weight, const Var& score_bias, const Tensor& mask) {
  check(projected.defined() && projected.rank() == 3, "bahdanau_weights: projected context {} must be [S, B, A]",
        shape_of(projected));
  const int64_t src = projected.dim(0), batch = projected.dim(1), width = projected.dim(2);
  check(state_term.defined() && state_term.shape() == Shape{batch, width},
        "bahdanau_weights: state term {} must be [{}, {}] for projected context {}", shape_of(state_term), batch,
        width, projected.shape());
  check(score_weight.defined() && score_weight.shape() == Shape{1, width},
        "bahdanau_weights: score weight {} must be [1, {}]", shape_of(score_weight), width);
  check(score_bias.defined() && score_bias.shape() == Shape{1}, "bahdanau_weights: score bias {} must be [1]",
        shape_of(score_bias));
  check(!mask.defined() || mask.shape() == Shape{src, batch}, "bahdanau_weights: mask {} must be [{}, {}]",
        shape_of(mask), src, batch);
  row_norms::check_row_norm("bahdanau_weights", "state norm", norm_state, width);
  const float* m = mask.defined() ? mask.data() : nullptr;
  for (int64_t b = 0; b < batch && m; ++b) {
    bool any_real = false;
    for (int64_t j = 0; j < src && !any_real; ++j) any_real = m[j * batch + b] != 0.0f;
    check(any_real, "bahdanau_weights: batch item {} has no real source position in mask {}", b, mask.shape());
  }

  const row_norms::RowKernel norm(norm_state, width);
  auto tanh_terms = std::make_shared<Tensor>(Tensor::empty(projected.shape()));  // T, at real positions
  auto stats = std::make_shared<std::vector<float>>(norm.normalizes() ? 2 * batch : 0);
  Tensor alpha = Tensor::empty(Shape{src, batch});
  const float *p = projected.value().data(), *z = state_term.value().data();
  const float *v = score_weight.value().data(), bias = score_bias.value().data()[0];
  float *t = tanh_terms->data(), *a = alpha.data(), *st = stats->data();
  const auto real = [m, batch](int64_t j, int64_t b) { return !m || m[j * batch + b] != 0.0f; };
  parallel_for(batch, std::max<int64_t>(1, kGrainHeavy / std::max<int64_t>(src * width, 1)),
               [=](int64_t lo, int64_t hi) {
    std::vector<float> q(width), e(src);
    for (int64_t b = lo; b < hi; ++b) {
      const float* qb = z + b * width;
      if (norm.normalizes()) norm.forward(qb, q.data(), st + 2 * b), qb = q.data();
      float top = -INFINITY;
      for (int64_t j = 0; j < src; ++j) {
        if (!real(j, b)) continue;
        const float* pj = p + (j * batch + b) * width;
        float* tj = t + (j * batch + b) * width;
#pragma omp simd
        for (int64_t i = 0; i < width; ++i) tj[i] = fast_tanh(pj[i] + qb[i]);
        e[j] = rg::dot(v, tj, width) + bias;
        top = std::max(top, e[j]);
      }
      float sum = 0.0f;
      for (int64_t j = 0; j < src; ++j) sum += e[j] = real(j, b) ? fast_exp(e[j] - top) : 0.0f;
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j < src; ++j) a[j * batch + b] = e[j] * inv;
    }
  });

  std::vector<Var> inputs{projected, state_term, score_weight, score_bias};
  const auto [gain_at, bias_at] = row_norms::add_norm_inputs(norm_state, inputs);
  Tensor mask_copy = mask;
  return tape().record(
      "bahdanau_weights", std::move(alpha), inputs,
      [tanh_terms, stats, forward_norm = norm, mask_copy, src, batch, width, gain_at, bias_at](Node& n) {
        bool fresh_p = false, fresh_z = false;
        Tensor* dp_t = n.input_grad(0, fresh_p);
        Tensor* dz_t = n.input_grad(1, fresh_z);
        float* const dp = dp_t ? dp_t->data() : nullptr;
        float* const dz = dz_t ? dz_t->data() : nullptr;
        const float* const z = n.inputs[1]->value.data();
        const float* const v = n.inputs[2]->value.data();
        const float* const a = n.value.data();
        const float* const g = n.grad.data();
        const float* const t = tanh_terms->data();
        const float* const m = mask_copy.defined() ? mask_copy.data() : nullptr;
        const int64_t grain = std::max<int64_t>(1, kGrainHeavy / std::max<int64_t>(src * width, 1));
        const int64_t chunks = chunk_count(batch, grain);
        fused_rows::PartialSums dv(n.input_grad(2), width, chunks), dbias(n.input_grad(3), 1, chunks);
        fused_rows::PartialSums dgain(row_norms::parameter_grad(n, gain_at), width, chunks);
        fused_rows::PartialSums dnorm_bias(row_norms::parameter_grad(n, bias_at), width, chunks);
        const row_norms::RowKernel norm = forward_norm.with_parameters(n, gain_at, bias_at);
        parallel_for_chunks(batch, grain, [&](int64_t chunk, int64_t lo, int64_t hi) {
          std::vector<float> dq(width);
          float *dv_part = dv.at(chunk), *db_part = dbias.at(chunk);
          for (int64_t b = lo; b < hi; ++b) {
            float sum = 0.0f;  // Σ_k α_k δ_k over the real positions: a padded one's δ may be anything
            for (int64_t j = 0; j < src; ++j)
              if (!m || m[j * batch + b] != 0.0f) sum += a[j * batch + b] * g[j * batch + b];
            std::fill(dq.begin(), dq.end(), 0.0f);
            for (int64_t j = 0; j < src; ++j) {
              const int64_t row = (j * batch + b) * width;
              if (m && m[j * batch + b] == 0.0f) {  // α_j = 0: no gradient, and T_j was never written
                if (dp && fresh_p) std::fill_n(dp + row, width, 0.0f);
                continue;
              }
              const float de = a[j * batch + b] * (g[j * batch + b] - sum);
              const float* tj = t + row;
              float* o = dp ? dp + row : nullptr;
              // One pass over the row for dP, dq and dv; which of them it
              // writes, and whether dP is fresh, are compile-time choices.
              // (with_outputs dispatches any three flags to compile-time ones: here
              // whether dP and dv are written, and whether dP is fresh.)
              fused_rows::with_outputs(o, dv_part, fresh_p, [&](auto has_dp, auto has_dv, auto fresh) {
#pragma omp simd
                for (int64_t i = 0; i < width; ++i) {
                  const float pre = de * v[i] * (1.0f - tj[i] * tj[i]);
                  dq[i] += pre;
                  if constexpr (decltype(has_dp)::value) o[i] = (decltype(fresh)::value ? 0.0f : o[i]) + pre;
                  if constexpr (decltype(has_dv)::value) dv_part[i] += de * tj[i];
                }
              });
              if (db_part) db_part[0] += de;
            }
            const int64_t row = b * width;
            if (norm.normalizes()) {
              norm.backward(fresh_z, z + row, dq.data(), stats->data() + 2 * b, dz ? dz + row : nullptr,
                            dgain.at(chunk), dnorm_bias.at(chunk));
            } else {
              fused_rows::put_row(dz ? dz + row : nullptr, fresh_z, dq.data(), width);
            }
          }
        });
        for (fused_rows::PartialSums* sums : {&dv, &dbias, &dgain, &dnorm_bias}) sums->add_into_gradient();
      });
}

}  // namespace rg
