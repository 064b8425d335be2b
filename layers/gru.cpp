#include "rmsgrad/layers/gru.h"

#include <cmath>
#include <optional>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/autograd/rnn_ops.h"
#include "rmsgrad/autograd/weight_norm.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/init.h"
#include "rmsgrad/layers/linear.h"

namespace rg {

namespace {

// [rows, cols] from N(init.center, σ²).
Tensor input_weight(int64_t rows, int64_t cols, const GRUInit& init, Generator& gen) {
  return shift_center(init_normal(Shape{rows, cols}, init.stddev, gen), init.center);
}

// [rows, cols] with every cols×cols block orthogonal (or N(0, σ)), then
// moved to init.center.
Tensor recurrent_weight(int64_t rows, int64_t cols, const GRUInit& init, Generator& gen) {
  if (!init.orthogonal_recurrent) return input_weight(rows, cols, init, gen);
  Tensor w = Tensor::empty(Shape{rows, cols});
  for (int64_t block = 0; block < rows / cols; ++block) {
    Tensor q = orthogonal(Shape{cols, cols}, gen);
    std::copy_n(q.data(), cols * cols, w.data() + block * cols * cols);
  }
  return shift_center(w, init.center);
}

}  // namespace

Var GRUCell::effective(const Var& weight, int which) const {
  return weight_norm_ ? weight_norm(weight, weight_gains_[static_cast<size_t>(which)]) : weight;
}

GRUCell::GRUCell(int64_t input_size, int64_t hidden_size, const NormOptions& norm, Generator& gen,
                 const GRUInit& init)
    : input_size_(input_size), hidden_size_(hidden_size) {
  check(input_size > 0 && hidden_size > 0, "GRUCell: sizes must be positive, got input {} hidden {}", input_size,
        hidden_size);
  const int64_t h = hidden_size;
  weight_norm_ = norm.kind == NormKind::WeightNorm;
  auto weight = [&](const char* name, Tensor w) {
    if (!weight_norm_) return register_parameter(name, w);
    Var v = register_parameter(std::string(name) + "_v", w);
    weight_gains_.push_back(register_parameter(std::string(name) + "_g", weight_norm_gains(w)));
    return v;
  };
  weight_x_gates = weight("weight_x_gates", input_weight(2 * h, input_size, init, gen));
  bias_gates = register_parameter("bias_gates", Tensor::zeros(Shape{2 * h}));
  weight_x_cand = weight("weight_x_cand", input_weight(h, input_size, init, gen));
  bias_cand = register_parameter("bias_cand", Tensor::zeros(Shape{h}));
  weight_h_gates = weight("weight_h_gates", recurrent_weight(2 * h, h, init, gen));
  weight_h_cand = weight("weight_h_cand", recurrent_weight(h, h, init, gen));
  register_module("norm_x_gates", norm_x_gates, make_norm(norm, 2 * h));
  register_module("norm_x_cand", norm_x_cand, make_norm(norm, h));
  register_module("norm_h_gates", norm_h_gates, make_norm(norm, 2 * h));
  register_module("norm_h_cand", norm_h_cand, make_norm(norm, h));
}

GRUCell::InputTerms GRUCell::project_input(const Var& x) {
  check(x.defined() && x.rank() >= 1 && x.dim(-1) == input_size_, "GRUCell: input {} must end in {}",
        shape_of(x), input_size_);
  Var gates = linear(x, effective(weight_x_gates, 0), bias_gates);  // one node: x W_xgᵀ + b_g
  Var cand = linear(x, effective(weight_x_cand, 1), bias_cand);
  return {norm_x_gates->forward(gates), norm_x_cand->forward(cand)};
}

GRUCell::RecurrentTerms GRUCell::recurrent_terms(const Var& h) {
  check(h.defined() && h.rank() == 2 && h.dim(1) == hidden_size_, "GRUCell: state {} must be [B, {}]",
        shape_of(h), hidden_size_);
  return {matmul(h, effective(weight_h_gates, 2), false, true), matmul(h, effective(weight_h_cand, 3), false, true)};
}

Var GRUCell::step(const Var& x_gates, const Var& x_candidate, const Var& h, const Tensor& mask) {
  RecurrentTerms recurrent = recurrent_terms(h);
  // One kernel for the recurrent norms and the update where both norms can
  // run inside it; the norms' own ops first otherwise.
  const std::optional<RowNorm> gates_norm = norm_h_gates->row_norm(), cand_norm = norm_h_cand->row_norm();
  if (gates_norm && cand_norm)
    return gru_update(x_gates, recurrent.gates, x_candidate, recurrent.candidate, h, mask, *gates_norm, *cand_norm);
  return gru_update(x_gates, norm_h_gates->forward(recurrent.gates), x_candidate,
                    norm_h_cand->forward(recurrent.candidate), h, mask);
}

Var GRUCell::forward(const Var& x, const Var& h, const Tensor& mask) {
  InputTerms in = project_input(x);
  return step(in.gates, in.candidate, h, mask);
}

GRU::GRU(int64_t input_size, int64_t hidden_size, const NormOptions& norm, Generator& gen, bool reverse,
         const GRUInit& init)
    : reverse_(reverse) {
  register_module("cell", cell, std::make_shared<GRUCell>(input_size, hidden_size, norm, gen, init));
}

template <class Keep>
Var GRU::run_steps(const Var& x, const Tensor& mask, const Var& h0, Keep&& keep) {
  check(x.defined() && x.rank() == 3, "GRU: input must be [T, B, E], got {}",
        shape_of(x));
  const int64_t steps = x.dim(0), batch = x.dim(1);
  check(steps > 0, "GRU: empty sequence {}", x.shape());
  check(!mask.defined() || mask.shape() == Shape{steps, batch}, "GRU: mask {} must be [{}, {}] for input {}",
        shape_of(mask), steps, batch, x.shape());
  Var h = h0.defined() ? h0 : constant(Tensor::zeros(Shape{batch, cell->hidden_size()}));
  GRUCell::InputTerms in = cell->project_input(x);
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t t = reverse_ ? steps - 1 - i : i;
    h = cell->step(at_step(in.gates, t), at_step(in.candidate, t), h, mask_at(mask, t));
    keep(t, h);
  }
  return h;
}

GRU::Output GRU::run(const Var& x, const Tensor& mask, const Var& h0) {
  std::vector<Var> states(x.defined() && x.rank() == 3 ? x.dim(0) : 0);
  Var last = run_steps(x, mask, h0, [&](int64_t t, const Var& h) { states[t] = h; });
  return {stack(states, 0), last};
}

Var GRU::last_state(const Var& x, const Tensor& mask, const Var& h0) {
  return run_steps(x, mask, h0, [](int64_t, const Var&) {});
}

BiGRU::BiGRU(int64_t input_size, int64_t hidden_size, const NormOptions& norm, Generator& gen, const GRUInit& init) {
  register_module("forward", forward_gru, std::make_shared<GRU>(input_size, hidden_size, norm, gen, false, init));
  register_module("backward", backward_gru, std::make_shared<GRU>(input_size, hidden_size, norm, gen, true, init));
}

Var BiGRU::forward(const Var& x, const Tensor& mask) {
  return concat({forward_gru->forward(x, mask), backward_gru->forward(x, mask)}, -1);
}

// ---- stacked layers ----

StackedGRU::StackedGRU(int64_t input_size, int64_t hidden_size, const StackedGRUOptions& options, Generator& gen)
    : hidden_size_(hidden_size), bidirectional_(options.bidirectional) {
  check(options.layers >= 1, "StackedGRU: the number of layers must be at least 1, not {}", options.layers);
  register_module("forward", forward_, std::make_shared<ModuleList<GRU>>());
  if (bidirectional_) register_module("reverse", reverse_, std::make_shared<ModuleList<GRU>>());
  for (int64_t l = 0; l < options.layers; ++l) {
    const int64_t in = l == 0 ? input_size : output_size();
    forward_->push_back(std::make_shared<GRU>(in, hidden_size, options.norm, gen, false, options.init));
    if (bidirectional_) reverse_->push_back(std::make_shared<GRU>(in, hidden_size, options.norm, gen, true, options.init));
  }
  if (options.dropout > 0.0f && options.layers > 1)
    register_module("dropout", dropout_, std::make_shared<Dropout>(options.dropout, gen.next_u64()));
}

StackedGRU::Output StackedGRU::run(const Var& x, const Tensor& mask, const std::vector<Var>& initial) {
  const size_t per_layer = bidirectional_ ? 2 : 1;
  check(initial.empty() || initial.size() == forward_->size() * per_layer,
        "StackedGRU: {} initial states given, the stack has {} (layers × directions)", initial.size(),
        forward_->size() * per_layer);
  auto initial_state = [&](size_t i) { return initial.empty() ? Var() : initial[i]; };
  Output out;
  Var input = x;
  for (size_t l = 0; l < forward_->size(); ++l) {
    if (l > 0 && dropout_) input = dropout_->forward(input, 1);  // [T, B, ·]
    GRU::Output f = (*forward_)[l].run(input, mask, initial_state(l * per_layer));
    out.last.push_back(f.last);
    if (bidirectional_) {
      GRU::Output r = (*reverse_)[l].run(input, mask, initial_state(l * per_layer + 1));
      out.last.push_back(r.last);
      input = concat({f.states, r.states}, -1);
    } else {
      input = f.states;
    }
  }
  out.states = input;
  return out;
}

// ---- the conditional GRU ----

ConditionalGRU::ConditionalGRU(int64_t embedding_size, int64_t hidden_size, int64_t context_size,
                               int64_t attention_size, const NormOptions& norm, Generator& gen, const GRUInit& init) {
  register_module("gru1", gru1, std::make_shared<GRUCell>(embedding_size, hidden_size, norm, gen, init));
  WeightInit attention_init;
  attention_init.kind = WeightInitKind::Normal;
  attention_init.stddev = init.stddev;
  attention_init.center = init.center;
  register_module("attention", attention, std::make_shared<MLPAttention>(context_size, hidden_size, attention_size, norm, gen, attention_init));
  register_module("gru2", gru2, std::make_shared<GRUCell>(context_size, hidden_size, norm, gen, init));
}

GRUCell::InputTerms ConditionalGRU::project_targets(const Var& embeddings) { return gru1->project_input(embeddings); }

ConditionalGRU::Step ConditionalGRU::step(const Var& x_gates, const Var& x_candidate, const Var& state,
                                          const AttentionValues& context, const Var& projected,
                                          const Tensor& source_mask, const Tensor& target_mask) {
  Var intermediate = gru1->step(x_gates, x_candidate, state, target_mask);
  AttentionOutput attended = attention->forward(intermediate, projected, context, source_mask);
  Var next = gru2->forward(attended.context, intermediate, target_mask);
  return {next, attended.context, attended.weights, intermediate};
}

}  // namespace rg
