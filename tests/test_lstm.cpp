// The LSTM: its fused cell ops against their composed twin and, with the
// norms inside them, against the norms as their own ops; gradient checks,
// masks and direction; the (normalized) cell and layer against PyTorch
// (tests/layer_references.h); parameter names and initialization.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "rmsgrad/autograd/lstm_ops.h"
#include "rmsgrad/layers/lstm.h"
#include "rmsgrad/rmsgrad.h"
#include "cell_norm_cases.h"
#include "layer_references.h"
#include "test_util.h"

using namespace rg;
using namespace rg::test;

namespace {

Tensor keep_complement(const Tensor& mask) {  // [B] → [B, 1] with 1 − m
  Tensor keep = Tensor::empty(Shape{mask.numel(), 1});
  for (int64_t i = 0; i < mask.numel(); ++i) keep.data()[i] = 1.0f - mask.data()[i];
  return keep;
}

// v = {gates [B, 4H], c_prev, c_normed, h_prev} → [c | h] [B, 2H], composed
// from primitive ops the way the equations read.
Var composed_cell(const std::vector<Var>& v, const Tensor& mask) {
  const int64_t h = v[1].dim(1);
  auto gate = [&](int k) { return slice(v[0], 1, k * h, (k + 1) * h); };
  Var c = sigmoid(gate(1)) * v[1] + sigmoid(gate(0)) * tanh(gate(2));
  Var out = sigmoid(gate(3)) * tanh(v[2]);
  if (mask.defined()) {
    Var m = constant(mask.reshape(Shape{mask.numel(), 1})), keep = constant(keep_complement(mask));
    c = c * m + v[1] * keep;
    out = out * m + v[3] * keep;
  }
  return concat({c, out}, 1);
}

Var fused_cell(const std::vector<Var>& v, const Tensor& mask) {
  return concat({lstm_cell_state(v[0], v[1], mask), lstm_hidden(v[0], v[2], v[3], mask)}, 1);
}

std::vector<Tensor> cell_inputs(int64_t batch, int64_t hidden, uint64_t seed) {
  Generator gen(seed);
  return {normal(Shape{batch, 4 * hidden}, 0.0f, 1.5f, gen), normal(Shape{batch, hidden}, 0.0f, 1.0f, gen),
          normal(Shape{batch, hidden}, 0.0f, 1.0f, gen), normal(Shape{batch, hidden}, 0.0f, 1.0f, gen)};
}

}  // namespace

TEST_CASE("lstm cell ops: fused equals composed, with and without a mask") {
  auto in = cell_inputs(3, 5, 1);
  for (bool masked : {false, true}) {
    Tensor mask = masked ? Tensor::from(Shape{3}, {1, 0, 1}) : Tensor();
    test::Evaluated fused = test::evaluate([&](const std::vector<Var>& v) { return fused_cell(v, mask); }, in);
    test::Evaluated composed = test::evaluate([&](const std::vector<Var>& v) { return composed_cell(v, mask); }, in);
    // Same float arithmetic in a different order: a few ulps.
    test::all_close(fused.y, composed.y, 1e-6f, 1e-5f, "output");
    for (int i = 0; i < 4; ++i)
      test::all_close(fused.grads[i], composed.grads[i], 1e-6f, 1e-5f, "grad " + std::to_string(i));
  }
}

TEST_CASE("lstm cell ops: gradient check; padded rows keep h and c; shape errors") {
  auto in = cell_inputs(3, 4, 2);
  Tensor mask = Tensor::from(Shape{3}, {1, 0, 1});
  GradCheckResult r = gradcheck([&](const std::vector<Var>& v) { return fused_cell(v, mask); }, in);
  CHECK_MESSAGE(r.ok, r.report);
  r = gradcheck([&](const std::vector<Var>& v) { return fused_cell(v, Tensor()); }, in);
  CHECK_MESSAGE(r.ok, r.report);
  // One Var as both c̃ and h_prev: its gradient gets two terms from one op,
  // written in turn into the same buffer (an earlier version lost one).
  r = gradcheck([&](const std::vector<Var>& v) { return lstm_hidden(v[0], v[1], v[1], mask); }, {in[0], in[2]});
  CHECK_MESSAGE(r.ok, r.report);

  NoGradGuard no_grad;
  Tensor c = lstm_cell_state(constant(in[0]), constant(in[1]), mask).value();
  Tensor h = lstm_hidden(constant(in[0]), constant(in[2]), constant(in[3]), mask).value();
  for (int j = 0; j < 4; ++j) {
    CHECK(c.at({1, j}) == in[1].at({1, j}));
    CHECK(h.at({1, j}) == in[3].at({1, j}));
  }
  CHECK_THROWS_AS(lstm_cell_state(constant(in[0]), constant(Tensor::zeros(Shape{3, 5}))), Error);
  CHECK_THROWS_AS(lstm_hidden(constant(in[0]), constant(in[2]), constant(Tensor::zeros(Shape{2, 4}))), Error);
  CHECK_THROWS_AS(lstm_cell_state(constant(in[0]), constant(in[1]), Tensor::ones(Shape{2})), Error);
}

namespace {

// The cell's three ops with norm_h and norm_c inside them, against the same
// norms as their own ops: inputs {x_term, h_term [B, 4H], c_prev, h_prev}.
Var fused_normalized_cell(const std::vector<Var>& v, const Tensor& mask, const RowNorm& nh, const RowNorm& nc) {
  Var gates = lstm_gates(v[0], v[1], nh);
  Var c = lstm_cell_state(gates, v[2], mask);
  return concat({c, lstm_hidden(gates, c, v[3], mask, nc)}, 1);
}
Var separate_norms_cell(const std::vector<Var>& v, const Tensor& mask, const RowNorm& nh, const RowNorm& nc) {
  Var gates = lstm_gates(v[0], apply_norm(nh, v[1]));
  Var c = lstm_cell_state(gates, v[2], mask);
  return concat({c, lstm_hidden(gates, apply_norm(nc, c), v[3], mask)}, 1);
}

std::vector<Tensor> normalized_cell_inputs(int64_t batch, int64_t hidden, uint64_t seed) {
  Generator gen(seed);
  return {normal(Shape{batch, 4 * hidden}, 0.0f, 1.0f, gen), normal(Shape{batch, 4 * hidden}, 0.0f, 1.0f, gen),
          normal(Shape{batch, hidden}, 0.0f, 1.0f, gen), normal(Shape{batch, hidden}, 0.0f, 1.0f, gen)};
}

}  // namespace

TEST_CASE("lstm cell ops with norm_h and norm_c inside equal the norms' own ops between them") {
  // 9 rows of 300 units: several parallel chunks of rows (lstm_hidden takes 6
  // rows a chunk), so that the gains' per-chunk sums are exercised.
  const int64_t batch = 9, hidden = 300;
  const int previous = num_threads();
  set_num_threads(2);  // two chunks of rows, each with its own partial sums
  auto in = normalized_cell_inputs(batch, hidden, 5);
  Tensor mask = Tensor::ones(Shape{batch});
  mask.data()[2] = 0.0f;
  for (const CellNormCase& h_case : kCellNorms) {
    const CellNormCase& c_case = kCellNorms[(&h_case - kCellNorms + 3) % std::size(kCellNorms)];
    INFO(h_case.name << " / " << c_case.name);
    Generator gen(8);
    const RowNorm nh = cell_norm(h_case, 4 * hidden, gen), nc = cell_norm(c_case, hidden, gen);
    check_fused_equals_separate(
        in, nh, nc, [&](const std::vector<Var>& v, const RowNorm& h, const RowNorm& c) {
          return fused_normalized_cell(v, mask, h, c);
        },
        [&](const std::vector<Var>& v, const RowNorm& h, const RowNorm& c) { return separate_norms_cell(v, mask, h, c); },
        gen);
  }
  set_num_threads(previous);
}

TEST_CASE("lstm cell ops with norms inside: gradient check of every input, gains and biases included") {
  auto in = normalized_cell_inputs(3, 4, 6);
  Tensor mask = Tensor::from(Shape{3}, {1, 0, 1});
  for (const CellNormCase& c : kCellNorms) {
    if (c.kind == RowNormKind::None) continue;  // the plain ops' checks are above
    INFO(c.name);
    Generator gen(10);
    RowNorm nh = cell_norm(c, 16, gen), nc = cell_norm(c, 4, gen);
    GradCheckResult r = gradcheck(
        [&](const std::vector<Var>& v) {
          size_t next = 4;
          const RowNorm h_norm = bind_leaves(nh, v, next), c_norm = bind_leaves(nc, v, next);
          return fused_normalized_cell(v, mask, h_norm, c_norm);
        },
        with_leaf_values(in, {&nh, &nc}));
    CHECK_MESSAGE(r.ok, r.report);
  }
  // One Var in two slots (lstm_gates' two terms; lstm_hidden's c and h_prev):
  // the fresh slot is written before the other adds.
  Generator twice_gen(13);
  const RowNorm nh = cell_norm(kCellNorms[2], 16, twice_gen);
  const RowNorm nc = cell_norm(kCellNorms[0], 4, twice_gen);
  GradCheckResult twice = gradcheck(
      [&](const std::vector<Var>& v) {
        Var gates = lstm_gates(v[0], v[0], nh);
        return lstm_hidden(gates, v[1], v[1], mask, nc);
      },
      {in[0], in[2]});
  CHECK_MESSAGE(twice.ok, twice.report);

  NoGradGuard no_grad;
  Generator gen(1);
  RowNorm wrong = cell_norm(kCellNorms[0], 4, gen);  // [H] where the gates need [4H]
  CHECK_THROWS_AS(lstm_gates(constant(in[0]), constant(in[1]), wrong), Error);
}

TEST_CASE("LSTMCell: the fused step equals the step with the norms' own ops, for every fusable norm") {
  for (const char* kind : {"layernorm", "rmsnorm", "prmsnorm", "l2norm"}) {
    INFO(kind);
    NormOptions fused{.kind = parse_norm_kind(kind)}, composed = fused;
    composed.preact_shift = 1e-30f;  // a norm with an offset cannot be fused: the cell takes the norms' own ops
    Generator g1(3), g2(3);
    LSTMCell a(6, 8, fused, g1), b(6, 8, composed, g2);
    REQUIRE(a.norm_c->row_norm().has_value());
    REQUIRE_FALSE(b.norm_c->row_norm().has_value());
    Generator gen(4);
    Tensor x = normal(Shape{5, 6}, 0.0f, 1.0f, gen);
    LSTMState state{constant(normal(Shape{5, 8}, 0.0f, 1.0f, gen)), constant(normal(Shape{5, 8}, 0.0f, 1.0f, gen))};
    LSTMState sa = a.forward(constant(x), state), sb = b.forward(constant(x), state);
    // The offset adds 1e-30 to inputs of magnitude ~1: the same floats.
    test::all_close(sa.h.value(), sb.h.value(), 0.0f, 0.0f, "h");
    test::all_close(sa.c.value(), sb.c.value(), 0.0f, 0.0f, "c");
  }
}

TEST_CASE("LSTM cell against torch.nn.LSTMCell") {
  nlohmann::json ref = test::load_reference("lstm_attention.json");
  const auto& c = ref["lstm_cell"][0];
  Var x = input(c, "x"), h0 = input(c, "h0"), c0 = input(c, "c0");
  Generator gen(0);
  LSTMCell cell(x.dim(1), h0.dim(1), norm_of(ref, c), gen);
  load_params(cell, c);
  LSTMState next = cell.forward(x, {h0, c0});
  std::vector<std::pair<std::string, Var>> outputs{{"h", next.h}, {"c", next.c}};
  backward_projected(c, outputs);
  compare_outputs(c, outputs);
  compare_grads(c, {{"x", x}, {"h0", h0}, {"c0", c0}}, cell);
}

TEST_CASE("LSTM layer against PyTorch (plain, masked, layernorm, rmsnorm, reverse, prmsnorm)") {
  nlohmann::json ref = test::load_reference("lstm_attention.json");
  for (const auto& c : ref["lstm"]) {
    const std::string name = c["name"];
    INFO(name);
    Var x = input(c, "x"), h0 = input(c, "h0"), c0 = input(c, "c0");
    Generator gen(0);
    LSTM lstm(x.dim(2), h0.dim(1), norm_of(ref, c), gen, c["reverse"].get<bool>());
    load_params(lstm, c, "cell.");
    LSTM::Output out = lstm.run(x, test::tensor_from_json(c["mask"]), {h0, c0});
    std::vector<std::pair<std::string, Var>> outputs{
        {"states", out.states}, {"last_h", out.last.h}, {"last_c", out.last.c}};
    backward_projected(c, outputs);
    compare_outputs(c, outputs);
    compare_grads(c, {{"x", x}, {"h0", h0}, {"c0", c0}}, lstm, "cell.");
  }
}

TEST_CASE("LSTM layer: gradient check through time with a normalized cell") {
  for (const char* kind : {"none", "rmsnorm", "layernorm", "prmsnorm"}) {
    NormOptions norm;
    norm.kind = parse_norm_kind(kind);
    Generator gen(3);
    LSTM lstm(3, 4, norm, gen, true);
    Tensor mask = Tensor::from(Shape{3, 2}, {1, 1, 1, 1, 1, 0});
    // x, h0 and c0 are all checked; h0, c0 enter through the reverse run's first step.
    GradCheckResult r = gradcheck(
        [&](const std::vector<Var>& v) {
          LSTM::Output out = lstm.run(v[0], mask, {v[1], v[2]});
          return concat({reshape(out.states, {6, 4}), out.last.c}, 0);
        },
        {normal(Shape{3, 2, 3}, 0.0f, 1.0f, gen), normal(Shape{2, 4}, 0.0f, 0.5f, gen),
         normal(Shape{2, 4}, 0.0f, 0.5f, gen)});
    CHECK_MESSAGE(r.ok, kind << ": " << r.report);
    tape().clear();
  }
}

TEST_CASE("LSTM names, init, direction and padding") {
  NormOptions norm;
  norm.kind = NormKind::RMSNorm;
  Generator gen(4);
  BiLSTM bi(3, 5, norm, gen);
  auto names = bi.named_parameters();
  CHECK(names[0].first == "forward.cell.weight_x");
  for (const char* n : {"forward.cell.bias", "forward.cell.weight_h", "forward.cell.norm_x.gain",
                        "forward.cell.norm_h.gain", "backward.cell.norm_c.gain"})
    CHECK_MESSAGE(has_name(bi, n), n);
  CHECK(bi.forward_lstm->cell->norm_c->named_parameters()[0].second.shape() == Shape{5});
  // Orthogonal square blocks: UᵀU = I for each of the four H×H gate blocks.
  Tensor u = bi.forward_lstm->cell->weight_h.value();
  for (int gate = 0; gate < 4; ++gate)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) {
        float dotp = 0;
        for (int k = 0; k < 5; ++k) dotp += u.at({gate * 5 + k, i}) * u.at({gate * 5 + k, j});
        CHECK(dotp == doctest::Approx(i == j ? 1.0f : 0.0f).epsilon(1e-4));
      }
  // Xavier uniform per gate block: |w| ≤ sqrt(6 / (E + H)).
  Tensor w = bi.forward_lstm->cell->weight_x.value();
  for (int64_t i = 0; i < w.numel(); ++i) CHECK(std::fabs(w.data()[i]) <= std::sqrt(6.0f / 8.0f));
  LSTMInit init;
  init.forget_bias = 1.0f;
  LSTMCell with_forget(3, 5, norm, gen, init);
  CHECK(with_forget.bias.value().at({5}) == 1.0f);
  CHECK(with_forget.bias.value().at({4}) == 0.0f);

  // Batch item 1 has length 2 of 4: its reverse state at step 0 must equal
  // running the reverse LSTM over its first two steps alone.
  NoGradGuard no_grad;
  Tensor x = normal(Shape{4, 2, 3}, 0.0f, 1.0f, gen);
  Tensor mask = Tensor::from(Shape{4, 2}, {1, 1, 1, 1, 1, 0, 1, 0});
  Tensor full = bi.forward(constant(x), mask).value();
  CHECK(full.shape() == Shape{4, 2, 10});
  Tensor short_x = Tensor::empty(Shape{2, 1, 3});
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e) short_x.data()[t * 3 + e] = x.at({t, 1, e});
  Tensor alone = bi.backward_lstm->forward(constant(short_x)).value();
  for (int j = 0; j < 5; ++j) CHECK(full.at({0, 1, 5 + j}) == doctest::Approx(alone.at({0, 0, j})).epsilon(1e-6));
  // The forward state is carried through the padding, h and c alike.
  LSTM::Output fwd = bi.forward_lstm->run(constant(x), mask);
  for (int j = 0; j < 5; ++j) CHECK(full.at({3, 1, j}) == full.at({1, 1, j}));
  LSTM::Output two = bi.forward_lstm->run(constant(short_x));
  for (int j = 0; j < 5; ++j) {
    CHECK(fwd.last.c.value().at({1, j}) == doctest::Approx(two.last.c.value().at({0, j})).epsilon(1e-6));
    CHECK(fwd.last.h.value().at({1, j}) == doctest::Approx(two.last.h.value().at({0, j})).epsilon(1e-6));
  }
  CHECK_THROWS_AS(bi.forward(constant(x), Tensor::ones(Shape{4, 3})), Error);
  CHECK_THROWS_AS(bi.forward(constant(Tensor::zeros(Shape{4, 2, 5}))), Error);
}
