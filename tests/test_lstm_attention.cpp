// LSTM and attention: the fused LSTM cell ops against their composed twin,
// gradient checks, masks and direction, the (normalized) LSTM, the MLP
// attention and multi-head attention against PyTorch (reference file written
// by tests/reference/make_lstm_attention_refs.py), and parameter names.
//
// Tolerance against PyTorch, 1e-5 + 1e-4·|b|: both sides run float32 through
// at most four steps of small GEMMs (K ≤ 28), norms over ≤ 68 units, sigmoid,
// tanh and softmax, with values and gradients of order 1. Each step adds a few
// ulps (~1e-7 relative) and the recurrence carries them forward with gains
// below ~2 per step, so differences stay near 1e-6; the bound leaves 10×.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "rmsgrad/autograd/lstm_ops.h"
#include "rmsgrad/layers/attention.h"
#include "rmsgrad/layers/lstm.h"
#include "rmsgrad/rmsgrad.h"
#include "cell_norm_cases.h"
#include "test_util.h"

using namespace rg;

namespace {

constexpr float kAtol = 1e-5f, kRtol = 1e-4f;

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

struct Evaluated {
  Tensor y;
  std::vector<Tensor> grads;
};

Evaluated run(const std::function<Var(const std::vector<Var>&)>& f, const std::vector<Tensor>& inputs) {
  std::vector<Var> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t.clone(), true);
  Var y = f(vars);
  Generator gen(99);
  tape().backward(y, normal(y.shape(), 0.0f, 1.0f, gen));
  tape().clear();
  Evaluated out{y.value(), {}};
  for (Var& v : vars) out.grads.push_back(v.has_grad() ? v.grad() : Tensor::zeros(v.shape()));
  return out;
}

NormOptions norm_of(const nlohmann::json& ref, const nlohmann::json& c) {
  NormOptions norm;
  norm.kind = parse_norm_kind(c["norm"].get<std::string>());
  norm.eps = ref["eps"];
  return norm;
}

// Copies the reference parameters into the module by dotted name (after
// dropping `prefix`), zeroing their gradients.
void load_params(Module& m, const nlohmann::json& c, const std::string& prefix = "") {
  auto params = m.named_parameters();
  REQUIRE(params.size() == c["params"].size());
  for (auto& [name, p] : params) {
    const std::string key = name.substr(prefix.size());
    REQUIRE_MESSAGE(c["params"].contains(key), "no reference for parameter " << name);
    p.value().copy_from(test::tensor_from_json(c["params"][key]));
    p.zero_grad();
  }
}

// Input Vars (requiring gradients) by name from the case.
Var input(const nlohmann::json& c, const std::string& name) {
  return Var(test::tensor_from_json(c["inputs"][name]), true);
}

// Backward of Σ_k sum(output_k · projection_k) over the named outputs.
void backward_projected(const nlohmann::json& c, const std::vector<std::pair<std::string, Var>>& outputs) {
  Var loss;
  for (const auto& [name, out] : outputs) {
    Var term = sum(out * constant(test::tensor_from_json(c["projections"][name])));
    loss = loss.defined() ? loss + term : term;
  }
  loss.backward();
  tape().clear();
}

void compare_outputs(const nlohmann::json& c, const std::vector<std::pair<std::string, Var>>& outputs) {
  for (const auto& [name, out] : outputs)
    test::all_close(out.value(), test::tensor_from_json(c["outputs"][name]), kAtol, kRtol, "output " + name);
}

void compare_grads(const nlohmann::json& c, const std::vector<std::pair<std::string, Var>>& inputs, Module& m,
                   const std::string& prefix = "") {
  for (auto [name, v] : inputs)
    test::all_close(v.grad(), test::tensor_from_json(c["grad_inputs"][name]), kAtol, kRtol, "grad " + name);
  for (auto& [name, p] : m.named_parameters()) {
    const std::string key = name.substr(prefix.size());
    REQUIRE_MESSAGE(c["grad_params"].contains(key), "no reference gradient for " << name);
    test::all_close(p.grad(), test::tensor_from_json(c["grad_params"][key]), kAtol, kRtol, "grad " + name);
  }
}

bool has_name(const Module& m, const std::string& name) {
  for (const auto& [n, _] : m.named_parameters())
    if (n == name) return true;
  return false;
}

}  // namespace

TEST_CASE("lstm cell ops: fused equals composed, with and without a mask") {
  auto in = cell_inputs(3, 5, 1);
  for (bool masked : {false, true}) {
    Tensor mask = masked ? Tensor::from(Shape{3}, {1, 0, 1}) : Tensor();
    Evaluated fused = run([&](const std::vector<Var>& v) { return fused_cell(v, mask); }, in);
    Evaluated composed = run([&](const std::vector<Var>& v) { return composed_cell(v, mask); }, in);
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
  Var gates = lstm_gates(v[0], test::apply_norm(nh, v[1]));
  Var c = lstm_cell_state(gates, v[2], mask);
  return concat({c, lstm_hidden(gates, test::apply_norm(nc, c), v[3], mask)}, 1);
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
  for (const test::CellNormCase& h_case : test::kCellNorms) {
    const test::CellNormCase& c_case = test::kCellNorms[(&h_case - test::kCellNorms + 3) % std::size(test::kCellNorms)];
    INFO(h_case.name << " / " << c_case.name);
    Generator gen(8);
    const RowNorm nh = test::cell_norm(h_case, 4 * hidden, gen), nc = test::cell_norm(c_case, hidden, gen);
    std::vector<Var> a, b;
    for (const Tensor& t : in) a.emplace_back(t.clone(), true), b.emplace_back(t.clone(), true);
    Var ya = fused_normalized_cell(a, mask, nh, nc);
    Tensor seed = normal(ya.shape(), 0.0f, 1.0f, gen);
    tape().backward(ya, seed);
    tape().clear();
    std::vector<Tensor> fused_param_grads;
    for (const RowNorm* norm : {&nh, &nc})
      for (Var& leaf : test::norm_leaves(*norm)) fused_param_grads.push_back(leaf.grad().clone()), leaf.zero_grad();
    Var yb = separate_norms_cell(b, mask, nh, nc);
    tape().backward(yb, seed);
    tape().clear();
    // The same float operations on every row, in the same order: equal bits.
    test::all_close(ya.value(), yb.value(), 0.0f, 0.0f, "output");
    for (int i = 0; i < 4; ++i) test::all_close(a[i].grad(), b[i].grad(), 0.0f, 0.0f, "grad " + std::to_string(i));
    // Gains and biases: sums of 9 O(1) terms cut into other chunks, a few ulps.
    size_t i = 0;
    for (const RowNorm* norm : {&nh, &nc})
      for (Var& leaf : test::norm_leaves(*norm))
        test::all_close(fused_param_grads[i++], leaf.grad(), 1e-5f, 1e-5f, "norm parameter grad");
  }
  set_num_threads(previous);
}

TEST_CASE("lstm cell ops with norms inside: gradient check of every input, gains and biases included") {
  auto in = normalized_cell_inputs(3, 4, 6);
  Tensor mask = Tensor::from(Shape{3}, {1, 0, 1});
  for (const test::CellNormCase& c : test::kCellNorms) {
    if (c.kind == RowNormKind::None) continue;  // the plain ops' checks are above
    INFO(c.name);
    Generator gen(10);
    RowNorm nh = test::cell_norm(c, 16, gen), nc = test::cell_norm(c, 4, gen);
    std::vector<Tensor> all = in;
    for (const RowNorm* norm : {&nh, &nc})
      for (const Var& leaf : test::norm_leaves(*norm)) all.push_back(leaf.value());
    GradCheckResult r = gradcheck(
        [&](const std::vector<Var>& v) {
          size_t next = 4;
          auto bind = [&](RowNorm norm) {
            if (norm.gain.defined()) norm.gain = v[next++];
            if (norm.bias.defined()) norm.bias = v[next++];
            return norm;
          };
          const RowNorm h_norm = bind(nh), c_norm = bind(nc);
          return fused_normalized_cell(v, mask, h_norm, c_norm);
        },
        all);
    CHECK_MESSAGE(r.ok, r.report);
  }
  // One Var in two slots (lstm_gates' two terms; lstm_hidden's c and h_prev):
  // the fresh slot is written before the other adds.
  Generator twice_gen(13);
  const RowNorm nh = test::cell_norm(test::kCellNorms[2], 16, twice_gen);
  const RowNorm nc = test::cell_norm(test::kCellNorms[0], 4, twice_gen);
  GradCheckResult twice = gradcheck(
      [&](const std::vector<Var>& v) {
        Var gates = lstm_gates(v[0], v[0], nh);
        return lstm_hidden(gates, v[1], v[1], mask, nc);
      },
      {in[0], in[2]});
  CHECK_MESSAGE(twice.ok, twice.report);

  NoGradGuard no_grad;
  Generator gen(1);
  RowNorm wrong = test::cell_norm(test::kCellNorms[0], 4, gen);  // [H] where the gates need [4H]
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

TEST_CASE("MLP attention against PyTorch (plain, layernorm, rmsnorm; masked)") {
  nlohmann::json ref = test::load_reference("lstm_attention.json");
  for (const auto& c : ref["mlp_attention"]) {
    const std::string name = c["name"];
    INFO(name);
    Var context = input(c, "context"), state = input(c, "state");
    const int64_t hidden = c["params"]["context_to_hidden.weight"]["shape"][0].get<int64_t>();
    Generator gen(0);
    MLPAttention attention(context.dim(2), state.dim(1), hidden, norm_of(ref, c), gen);
    load_params(attention, c);
    AttentionOutput out =
        attention.forward(state, attention.precompute(context), context, test::tensor_from_json(c["mask"]));
    std::vector<std::pair<std::string, Var>> outputs{{"context", out.context}, {"weights", out.weights}};
    backward_projected(c, outputs);
    compare_outputs(c, outputs);
    compare_grads(c, {{"context", context}, {"state", state}}, attention);
  }
}

TEST_CASE("MLP attention: padded positions get exactly zero weight and gradient; gradient check") {
  NormOptions norm;
  norm.kind = NormKind::RMSNorm;
  Generator gen(5);
  MLPAttention attention(5, 4, 6, norm, gen);
  CHECK(has_name(attention, "context_to_hidden.weight"));
  CHECK(has_name(attention, "context_to_hidden.bias"));
  CHECK(has_name(attention, "state_to_hidden.weight"));
  CHECK_FALSE(has_name(attention, "state_to_hidden.bias"));
  CHECK(has_name(attention, "hidden_to_score.weight"));
  CHECK(has_name(attention, "norm_context.gain"));
  CHECK(has_name(attention, "norm_state.gain"));

  Tensor mask = Tensor::from(Shape{4, 2}, {1, 1, 1, 0, 1, 0, 0, 0});  // lengths 3 and 1
  Var context(normal(Shape{4, 2, 5}, 0.0f, 1.0f, gen), true);
  Var state(normal(Shape{2, 4}, 0.0f, 1.0f, gen), true);
  Var projected = attention.precompute(context);
  AttentionOutput out = attention.forward(state, projected, context, mask);
  AttentionOutput again = attention.forward(state, projected, context, mask);  // one precompute, many steps
  CHECK(max_abs_diff(out.context.value(), again.context.value()) == 0.0f);
  Tensor alpha = out.weights.value();
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t b = 0; b < 2; ++b) {
      if (mask.at({j, b}) == 0.0f) CHECK(alpha.at({j, b}) == 0.0f);
      else CHECK(alpha.at({j, b}) > 0.0f);
    }
  CHECK(alpha.at({0, 1}) == doctest::Approx(1.0f));
  Generator proj_gen(6);
  tape().backward(out.context, normal(out.context.shape(), 0.0f, 1.0f, proj_gen));
  tape().clear();
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t e = 0; e < 5; ++e)
        if (mask.at({j, b}) == 0.0f) CHECK(context.grad().at({j, b, e}) == 0.0f);

  GradCheckResult r = gradcheck(
      [&](const std::vector<Var>& v) {
        AttentionOutput o = attention.forward(v[1], attention.precompute(v[0]), v[0], mask);
        return concat({reshape(o.context, {-1}), reshape(o.weights, {-1})}, 0);
      },
      {normal(Shape{4, 2, 5}, 0.0f, 1.0f, gen), normal(Shape{2, 4}, 0.0f, 1.0f, gen)});
  CHECK_MESSAGE(r.ok, r.report);
  tape().clear();

  NoGradGuard no_grad;
  Tensor empty_column = Tensor::from(Shape{4, 2}, {1, 0, 1, 0, 0, 0, 0, 0});
  CHECK_THROWS_AS(attention.forward(state, projected, context, empty_column), Error);
  CHECK_THROWS_AS(attention.forward(state, projected, context, Tensor::ones(Shape{2, 4})), Error);
}

TEST_CASE("bahdanau_weights: gradient check of every input, the state norm's gain and bias included") {
  // [S = 4, B = 3]: item 0 real at j = 0..2, item 1 at j = 0 only, item 2 at j = 0, 1 and 3 (a gap)
  Tensor mask = Tensor::from(Shape{4, 3}, {1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 1});
  for (const test::CellNormCase& c : test::kCellNorms) {
    INFO(c.name);
    Generator gen(11);
    RowNorm norm = test::cell_norm(c, 5, gen);
    std::vector<Tensor> in{normal(Shape{4, 3, 5}, 0.0f, 1.0f, gen), normal(Shape{3, 5}, 0.0f, 1.0f, gen),
                           normal(Shape{1, 5}, 0.0f, 1.0f, gen), normal(Shape{1}, 0.0f, 1.0f, gen)};
    for (const Var& leaf : test::norm_leaves(norm)) in.push_back(leaf.value());
    GradCheckResult r = gradcheck(
        [&](const std::vector<Var>& v) {
          RowNorm bound = norm;
          size_t next = 4;
          if (bound.gain.defined()) bound.gain = v[next++];
          if (bound.bias.defined()) bound.bias = v[next++];
          return bahdanau_weights(v[0], v[1], bound, v[2], v[3], mask);
        },
        in);
    CHECK_MESSAGE(r.ok, r.report);
    NoGradGuard no_grad;
    Tensor alpha = bahdanau_weights(constant(in[0]), constant(in[1]), norm, constant(in[2]), constant(in[3]), mask)
                       .value();
    for (int64_t b = 0; b < 3; ++b) {
      float total = 0.0f;
      for (int64_t j = 0; j < 4; ++j) {
        if (mask.at({j, b}) == 0.0f) CHECK(alpha.at({j, b}) == 0.0f);
        total += alpha.at({j, b});
      }
      CHECK(total == doctest::Approx(1.0f).epsilon(1e-6));
    }
  }
  NoGradGuard no_grad;
  Generator gen(12);
  Var p = constant(normal(Shape{4, 3, 5}, 0.0f, 1.0f, gen)), q = constant(normal(Shape{3, 5}, 0.0f, 1.0f, gen));
  Var v = constant(normal(Shape{1, 5}, 0.0f, 1.0f, gen)), bias = constant(Tensor::zeros(Shape{1}));
  Tensor none_real = Tensor::from(Shape{4, 3}, {1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1});
  CHECK_THROWS_AS(bahdanau_weights(p, q, {}, v, bias, none_real), Error);  // item 1 has no real position
  CHECK_THROWS_AS(bahdanau_weights(p, constant(Tensor::zeros(Shape{3, 4})), {}, v, bias), Error);
}

TEST_CASE("MLP attention: the fused weights equal the composed ops' (a norm with an offset takes the ops)") {
  for (const char* kind : {"none", "layernorm", "rmsnorm", "prmsnorm"}) {
    INFO(kind);
    NormOptions fused{.kind = parse_norm_kind(kind)}, composed = fused;
    composed.preact_shift = 1e-30f;  // adds nothing to inputs of magnitude ~1, but cannot run inside a kernel
    Generator g1(5), g2(5);
    MLPAttention a(5, 4, 16, fused, g1), b(5, 4, 16, composed, g2);
    REQUIRE(a.norm_state->row_norm().has_value());
    REQUIRE_FALSE(b.norm_state->row_norm().has_value());
    Generator gen(6);
    Tensor ctx = normal(Shape{6, 3, 5}, 0.0f, 1.0f, gen), st = normal(Shape{3, 4}, 0.0f, 1.0f, gen);
    Tensor mask = Tensor::from(Shape{6, 3}, {1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0});
    Tensor seed = normal(Shape{3, 5}, 0.0f, 1.0f, gen);
    Var ca(ctx.clone(), true), sa(st.clone(), true), cb(ctx.clone(), true), sb(st.clone(), true);
    AttentionOutput oa = a.forward(sa, a.precompute(ca), ca, mask);
    tape().backward(oa.context, seed);
    tape().clear();
    AttentionOutput ob = b.forward(sb, b.precompute(cb), cb, mask);
    tape().backward(ob.context, seed);
    tape().clear();
    // The scores are dot products of 16 O(1) terms summed in another order
    // (the fused op's lanes against a one-column GEMM): a few ulps each, and
    // softmax and its backward carry them at gains of order 1.
    test::all_close(oa.weights.value(), ob.weights.value(), kAtol, kRtol, "weights");
    test::all_close(oa.context.value(), ob.context.value(), kAtol, kRtol, "context");
    test::all_close(ca.grad(), cb.grad(), kAtol, kRtol, "d context");
    test::all_close(sa.grad(), sb.grad(), kAtol, kRtol, "d state");
    auto pb = b.named_parameters();  // a's, and b's norms' offsets
    for (auto [name, param] : a.named_parameters()) {
      auto same = std::find_if(pb.begin(), pb.end(), [&](const auto& named) { return named.first == name; });
      REQUIRE(same != pb.end());
      test::all_close(param.grad(), same->second.grad(), kAtol, kRtol, "d " + name);
    }
  }
}

TEST_CASE("Multi-head attention against torch.nn.MultiheadAttention (key padding, causal self-attention)") {
  nlohmann::json ref = test::load_reference("lstm_attention.json");
  for (const auto& c : ref["multihead"]) {
    const std::string name = c["name"];
    INFO(name);
    const bool causal = c["causal"];
    Var query = input(c, "query");
    Var key = causal ? query : input(c, "key"), value = causal ? query : input(c, "value");
    Generator gen(0);
    MultiHeadAttention attention(query.dim(2), c["heads"].get<int64_t>(), gen);
    load_params(attention, c);
    AttentionOutput out = attention.forward(query, key, value, test::tensor_from_json(c["key_mask"]), causal);
    std::vector<std::pair<std::string, Var>> outputs{{"output", out.context}, {"weights", out.weights}};
    backward_projected(c, outputs);
    compare_outputs(c, outputs);
    std::vector<std::pair<std::string, Var>> inputs{{"query", query}};
    if (!causal) inputs.insert(inputs.end(), {{"key", key}, {"value", value}});
    compare_grads(c, inputs, attention);
  }
}

TEST_CASE("Multi-head attention: masks give exactly zero weight; gradient check; names") {
  Generator gen(7);
  MultiHeadAttention attention(6, 2, gen);
  auto names = attention.named_parameters();
  REQUIRE(names.size() == 8);
  CHECK(names[0].first == "q_proj.weight");
  CHECK(names[7].first == "out_proj.bias");

  Tensor key_mask = Tensor::from(Shape{2, 4}, {1, 1, 1, 1, 1, 1, 0, 0});
  Var x(normal(Shape{2, 4, 6}, 0.0f, 1.0f, gen), true);
  AttentionOutput out = attention.forward(x, x, x, key_mask, true);
  CHECK(out.context.shape() == Shape{2, 4, 6});
  CHECK(out.weights.shape() == Shape{2, 2, 4, 4});
  Tensor w = out.weights.value();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 4; ++i) {
        float total = 0;
        for (int64_t j = 0; j < 4; ++j) {
          const bool blocked = j > i || key_mask.at({b, j}) == 0.0f;
          if (blocked) CHECK(w.at({b, h, i, j}) == 0.0f);
          total += w.at({b, h, i, j});
        }
        CHECK(total == doctest::Approx(1.0f));
      }
  tape().clear();

  // Cross-attention: value rows at padded keys receive exactly zero gradient.
  Var query(normal(Shape{2, 3, 6}, 0.0f, 1.0f, gen), true);
  Var value(normal(Shape{2, 4, 6}, 0.0f, 1.0f, gen), true);
  AttentionOutput cross = attention.forward(query, value, value, key_mask);
  Generator proj_gen(8);
  tape().backward(cross.context, normal(cross.context.shape(), 0.0f, 1.0f, proj_gen));
  tape().clear();
  for (int64_t j = 2; j < 4; ++j)
    for (int64_t e = 0; e < 6; ++e) CHECK(value.grad().at({1, j, e}) == 0.0f);

  GradCheckResult r = gradcheck(
      [&](const std::vector<Var>& v) { return attention.forward(v[0], v[1], v[2], key_mask).context; },
      {normal(Shape{2, 3, 6}, 0.0f, 1.0f, gen), normal(Shape{2, 4, 6}, 0.0f, 1.0f, gen),
       normal(Shape{2, 4, 6}, 0.0f, 1.0f, gen)});
  CHECK_MESSAGE(r.ok, r.report);
  tape().clear();

  NoGradGuard no_grad;
  CHECK_THROWS_AS(MultiHeadAttention(6, 4, gen), Error);
  CHECK_THROWS_AS(attention.forward(query, value, value, Tensor::zeros(Shape{2, 4})), Error);
  CHECK_THROWS_AS(attention.forward(query, value, value, {}, true), Error);  // causal needs Tq = Tk
}
