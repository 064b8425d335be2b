// LSTM cell, layer and bidirectional layer; the equations are in lstm.h, the
// fused pointwise kernels in autograd/lstm_ops.cpp.
#include "rmsgrad/layers/lstm.h"

#include <algorithm>
#include <optional>
#include <span>
#include <vector>

#include "rmsgrad/autograd/lstm_ops.h"
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/init.h"
#include "rmsgrad/layers/linear.h"

namespace rg {

namespace {

// [4H, cols] built from four H×cols gate blocks (i, f, g, o), each drawn on
// its own: Xavier uniform, or orthogonal when the block is square and
// `orthogonal_blocks` is set.
Tensor gate_blocks(int64_t hidden, int64_t cols, bool orthogonal_blocks, Generator& gen) {
  Tensor w = Tensor::empty(Shape{4 * hidden, cols});
  for (int64_t gate = 0; gate < 4; ++gate) {
    Tensor block = orthogonal_blocks ? orthogonal(Shape{hidden, cols}, gen) : xavier_uniform(Shape{hidden, cols}, gen);
    std::copy_n(block.data(), hidden * cols, w.data() + gate * hidden * cols);
  }
  return w;
}

}  // namespace

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden_size, const NormOptions& norm, Generator& gen,
                   const LSTMInit& init)
    : input_size_(input_size), hidden_size_(hidden_size) {
  check(input_size > 0 && hidden_size > 0, "LSTMCell: sizes must be positive, got input {} hidden {}", input_size,
        hidden_size);
  const int64_t h = hidden_size;
  weight_x = register_parameter("weight_x", gate_blocks(h, input_size, false, gen));
  Tensor b = Tensor::zeros(Shape{4 * h});
  std::fill_n(b.data() + h, h, init.forget_bias);
  bias = register_parameter("bias", b);
  weight_h = register_parameter("weight_h", gate_blocks(h, h, init.orthogonal_recurrent, gen));
  register_module("norm_x", norm_x, make_norm(norm, 4 * h));
  register_module("norm_h", norm_h, make_norm(norm, 4 * h));
  register_module("norm_c", norm_c, make_norm(norm, h));
}

Var LSTMCell::project_input(const Var& x) {
  check(x.defined() && x.rank() >= 1 && x.dim(-1) == input_size_, "LSTMCell: input {} must end in {}",
        shape_of(x), input_size_);
  // Rows flattened to [N, E] so that every norm (BatchNorm too) sees rows.
  std::vector<int64_t> dims = x.shape().dims();
  Var rows = reshape(x, {-1, input_size_});
  Var term = norm_x->forward(linear(rows, weight_x, bias));  // [N, 4H]
  dims.back() = 4 * hidden_size_;
  return reshape(term, dims);
}

LSTMState LSTMCell::step(const Var& x_term, const LSTMState& state, const Tensor& mask) {
  check(state.h.defined() && state.h.rank() == 2 && state.h.dim(1) == hidden_size_,
        "LSTMCell: state h {} must be [B, {}]", shape_of(state.h), hidden_size_);
  check(state.c.defined() && state.c.shape() == state.h.shape(), "LSTMCell: state c {} must match h {}",
        shape_of(state.c), state.h.shape());
  check(x_term.defined() && x_term.shape() == Shape{state.h.dim(0), 4 * hidden_size_},
        "LSTMCell: input term {} must be [{}, {}]", shape_of(x_term), state.h.dim(0), 4 * hidden_size_);
  // The norms run inside the cell's ops where they can, as their own ops otherwise.
  const std::optional<RowNorm> h_norm = norm_h->row_norm(), c_norm = norm_c->row_norm();
  Var h_term = linear(state.h, weight_h, Var());
  Var gates = h_norm ? lstm_gates(x_term, h_term, *h_norm) : lstm_gates(x_term, norm_h->forward(h_term));  // [B, 4H]
  Var c = lstm_cell_state(gates, state.c, mask);
  Var h = c_norm ? lstm_hidden(gates, c, state.h, mask, *c_norm)
                 : lstm_hidden(gates, norm_c->forward(c), state.h, mask);
  return {h, c};
}

LSTMState LSTMCell::forward(const Var& x, const LSTMState& state, const Tensor& mask) {
  return step(project_input(x), state, mask);
}

LSTMState LSTMCell::zero_state(int64_t batch) const {
  return {constant(Tensor::zeros(Shape{batch, hidden_size_})), constant(Tensor::zeros(Shape{batch, hidden_size_}))};
}

LSTM::LSTM(int64_t input_size, int64_t hidden_size, const NormOptions& norm, Generator& gen, bool reverse,
           const LSTMInit& init)
    : reverse_(reverse) {
  register_module("cell", cell, std::make_shared<LSTMCell>(input_size, hidden_size, norm, gen, init));
}

LSTM::Output LSTM::run(const Var& x, const Tensor& mask, const LSTMState& initial) {
  check(x.defined() && x.rank() == 3, "LSTM: input must be [T, B, E], got {}", shape_of(x));
  const int64_t steps = x.dim(0), batch = x.dim(1);
  check(steps > 0, "LSTM: empty sequence {}", x.shape());
  check(!mask.defined() || mask.shape() == Shape{steps, batch}, "LSTM: mask {} must be [{}, {}] for input {}",
        shape_of(mask), steps, batch, x.shape());
  LSTMState zeros = cell->zero_state(batch);
  LSTMState state{initial.h.defined() ? initial.h : zeros.h, initial.c.defined() ? initial.c : zeros.c};
  Var x_terms = cell->project_input(x);  // [T, B, 4H], one GEMM for every step
  std::vector<Var> states(steps);
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t t = reverse_ ? steps - 1 - i : i;
    state = cell->step(at_step(x_terms, t), state, mask_at(mask, t));
    states[t] = state.h;
  }
  return {stack(states, 0), state};
}

BiLSTM::BiLSTM(int64_t input_size, int64_t hidden_size, const NormOptions& norm, Generator& gen,
               const LSTMInit& init) {
  register_module("forward", forward_lstm, std::make_shared<LSTM>(input_size, hidden_size, norm, gen, false, init));
  register_module("backward", backward_lstm, std::make_shared<LSTM>(input_size, hidden_size, norm, gen, true, init));
}

Var BiLSTM::forward(const Var& x, const Tensor& mask) {
  return concat({forward_lstm->forward(x, mask), backward_lstm->forward(x, mask)}, -1);
}

}  // namespace rg
