// GRU: the fused update against its composed twin, gradient checks, masks and
// direction, and the (normalized) GRU layer against PyTorch.
#include <doctest/doctest.h>

#include "rmsgrad/autograd/rnn_ops.h"
#include "rmsgrad/layers/gru.h"
#include "rmsgrad/rmsgrad.h"
#include "cell_norm_cases.h"
#include "test_util.h"

using namespace rg;
using namespace rg::test;

namespace {

Var composed_update(const std::vector<Var>& v, const Tensor& mask) {
  const int64_t h = v[4].dim(1);
  Var r = sigmoid(slice(v[0], 1, 0, h) + slice(v[1], 1, 0, h));
  Var u = sigmoid(slice(v[0], 1, h, 2 * h) + slice(v[1], 1, h, 2 * h));
  Var c = tanh(v[2] + r * v[3]);
  Var next = u * v[4] + (1.0f - u) * c;
  if (!mask.defined()) return next;
  Tensor m = mask.reshape(Shape{mask.numel(), 1});
  return next * constant(m) + v[4] * constant([&] {
           Tensor keep = Tensor::empty(m.shape());
           for (int64_t i = 0; i < m.numel(); ++i) keep.data()[i] = 1.0f - m.data()[i];
           return keep;
         }());
}

std::vector<Tensor> update_inputs(int64_t batch, int64_t hidden, uint64_t seed) {
  Generator gen(seed);
  return {normal(Shape{batch, 2 * hidden}, 0.0f, 1.0f, gen), normal(Shape{batch, 2 * hidden}, 0.0f, 1.0f, gen),
          normal(Shape{batch, hidden}, 0.0f, 1.0f, gen), normal(Shape{batch, hidden}, 0.0f, 1.0f, gen),
          normal(Shape{batch, hidden}, 0.0f, 1.0f, gen)};
}

}  // namespace

TEST_CASE("gru_update: fused equals composed, with and without a mask") {
  auto in = update_inputs(3, 5, 1);
  Tensor mask = Tensor::from(Shape{3}, {1, 0, 1});
  for (bool masked : {false, true}) {
    Tensor m = masked ? mask : Tensor();
    test::Evaluated fused =
        test::evaluate([&](const std::vector<Var>& v) { return gru_update(v[0], v[1], v[2], v[3], v[4], m); }, in);
    test::Evaluated composed = test::evaluate([&](const std::vector<Var>& v) { return composed_update(v, m); }, in);
    // Same float arithmetic in a different order: a few ulps.
    test::all_close(fused.y, composed.y, 1e-6f, 1e-5f, "output");
    for (int i = 0; i < 5; ++i)
      test::all_close(fused.grads[i], composed.grads[i], 1e-6f, 1e-5f, "grad " + std::to_string(i));
  }
}

TEST_CASE("gru_update: gradient check, and padded rows keep their state") {
  auto in = update_inputs(2, 4, 2);
  Tensor mask = Tensor::from(Shape{2}, {0, 1});
  GradCheckResult r = gradcheck(
      [&](const std::vector<Var>& v) { return gru_update(v[0], v[1], v[2], v[3], v[4], mask); }, in);
  CHECK_MESSAGE(r.ok, r.report);
  NoGradGuard no_grad;
  Var h = gru_update(constant(in[0]), constant(in[1]), constant(in[2]), constant(in[3]), constant(in[4]), mask);
  for (int j = 0; j < 4; ++j) CHECK(h.value().at({0, j}) == in[4].at({0, j}));
  CHECK_THROWS_AS(gru_update(constant(in[0]), constant(in[1]), constant(in[2]), constant(in[3]),
                             constant(Tensor::zeros(Shape{2, 5}))),
                  Error);
}

TEST_CASE("gru_update with its recurrent norms inside equals the norms' own ops, then the update") {
  // 9 rows: more than one parallel chunk of rows at hidden 300 (2048 / 300 = 6
  // rows a chunk), so that the gains' per-chunk sums are exercised.
  const int64_t batch = 9, hidden = 300;
  const int previous = num_threads();
  set_num_threads(2);  // two chunks of rows, each with its own partial sums
  auto in = update_inputs(batch, hidden, 3);
  Tensor mask = Tensor::ones(Shape{batch});
  mask.data()[4] = 0.0f;
  for (const CellNormCase& gates_case : kCellNorms) {
    const CellNormCase& cand_case = kCellNorms[(&gates_case - kCellNorms + 2) % std::size(kCellNorms)];
    INFO(gates_case.name << " / " << cand_case.name);
    Generator gen(7);
    const RowNorm gates = cell_norm(gates_case, 2 * hidden, gen), cand = cell_norm(cand_case, hidden, gen);
    check_fused_equals_separate(
        in, gates, cand,
        [&](const std::vector<Var>& v, const RowNorm& g, const RowNorm& c) {
          return gru_update(v[0], v[1], v[2], v[3], v[4], mask, g, c);
        },
        [&](const std::vector<Var>& v, const RowNorm& g, const RowNorm& c) {
          return gru_update(v[0], apply_norm(g, v[1]), v[2], apply_norm(c, v[3]), v[4], mask);
        },
        gen);
  }
  set_num_threads(previous);
}

TEST_CASE("gru_update with its recurrent norms: gradient check of every input, gains and biases included") {
  const int64_t batch = 3, hidden = 4;
  auto in = update_inputs(batch, hidden, 4);
  Tensor mask = Tensor::from(Shape{3}, {1, 0, 1});
  for (const CellNormCase& c : kCellNorms) {
    if (c.kind == RowNormKind::None) continue;  // the plain update's check is above
    INFO(c.name);
    Generator gen(9);
    RowNorm gates = cell_norm(c, 2 * hidden, gen), cand = cell_norm(c, hidden, gen);
    GradCheckResult r = gradcheck(
        [&](const std::vector<Var>& v) {
          size_t next = 5;
          const RowNorm g = bind_leaves(gates, v, next), k = bind_leaves(cand, v, next);
          return gru_update(v[0], v[1], v[2], v[3], v[4], mask, g, k);
        },
        with_leaf_values(in, {&gates, &cand}));
    CHECK_MESSAGE(r.ok, r.report);
  }
  // One Var in two slots (h_cand is h_prev): the fresh slot is written before the other adds.
  Generator twice_gen(10);
  RowNorm gates = cell_norm(kCellNorms[0], 2 * hidden, twice_gen), cand = cell_norm(kCellNorms[2], hidden, twice_gen);
  GradCheckResult twice = gradcheck(
      [&](const std::vector<Var>& v) { return gru_update(v[0], v[1], v[2], v[3], v[3], mask, gates, cand); },
      {in[0], in[1], in[2], in[4]});
  CHECK_MESSAGE(twice.ok, twice.report);
  // A gain that needs no gradient (a constant) changes no other gradient.
  std::vector<Var> a = test::fresh_leaves(in), b = test::fresh_leaves(in);
  RowNorm frozen = cand;
  frozen.gain = constant(cand.gain.value());
  Tensor seed = normal(Shape{batch, hidden}, 0.0f, 1.0f, twice_gen);
  tape().backward(gru_update(a[0], a[1], a[2], a[3], a[4], mask, gates, cand), seed);
  tape().backward(gru_update(b[0], b[1], b[2], b[3], b[4], mask, gates, frozen), seed);
  tape().clear();
  for (int i = 0; i < 5; ++i) test::all_close(a[i].grad(), b[i].grad(), 0.0f, 0.0f, "grad " + std::to_string(i));

  NoGradGuard no_grad;
  Generator gen(1);
  RowNorm wrong = cell_norm(kCellNorms[0], hidden, gen);  // [H] where the gates need [2H]
  CHECK_THROWS_AS(gru_update(constant(in[0]), constant(in[1]), constant(in[2]), constant(in[3]), constant(in[4]),
                             mask, wrong, {}),
                  Error);
  RowNorm too_wide = cell_norm(kCellNorms[4], hidden, gen);  // pRMSNorm
  too_wide.config.k = hidden + 1;
  CHECK_THROWS_AS(gru_update(constant(in[0]), constant(in[1]), constant(in[2]), constant(in[3]), constant(in[4]),
                             mask, {}, too_wide),
                  Error);
}

TEST_CASE("GRUCell: the fused step equals the step with the norms' own ops, for every fusable norm") {
  for (const char* kind : {"layernorm", "rmsnorm", "prmsnorm", "l2norm"}) {
    INFO(kind);
    NormOptions fused{.kind = parse_norm_kind(kind)}, composed = fused;
    composed.preact_shift = 1e-30f;  // a norm with an offset cannot be fused: the cell takes the norms' own ops
    Generator g1(3), g2(3);
    GRUCell a(6, 8, fused, g1), b(6, 8, composed, g2);
    REQUIRE(a.norm_h_gates->row_norm().has_value());
    REQUIRE_FALSE(b.norm_h_gates->row_norm().has_value());
    Generator gen(4);
    Tensor x = normal(Shape{5, 6}, 0.0f, 1.0f, gen), h = normal(Shape{5, 8}, 0.0f, 1.0f, gen);
    Var ha = a.forward(constant(x), constant(h)), hb = b.forward(constant(x), constant(h));
    // The offset adds 1e-30 to inputs of magnitude ~1: the same floats.
    test::all_close(ha.value(), hb.value(), 0.0f, 0.0f, "state");
  }
}

TEST_CASE("GRU layer against PyTorch (plain, masked, layernorm, rmsnorm, prmsnorm)") {
  nlohmann::json ref = test::load_reference("gru.json");
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"];
    INFO(name);
    Tensor x = test::tensor_from_json(c["x"]);
    const int64_t input = x.dim(2), hidden = c["h0"]["shape"][1].get<int64_t>();
    NormOptions norm;
    norm.kind = parse_norm_kind(c["norm"].get<std::string>());
    norm.eps = ref["eps"];
    Generator gen(0);
    GRU gru(input, hidden, norm, gen);
    auto params = gru.named_parameters();
    REQUIRE(params.size() == c["params"].size());
    for (auto& [pname, p] : params) {
      const std::string key = pname.substr(std::string("cell.").size());
      REQUIRE_MESSAGE(c["params"].contains(key), "no reference for parameter " << pname);
      p.value().copy_from(test::tensor_from_json(c["params"][key]));
      p.zero_grad();
    }
    Var xv(x, true), h0(test::tensor_from_json(c["h0"]), true);
    Var out = gru.forward(xv, test::tensor_from_json(c["mask"]), h0);
    tape().backward(out, test::tensor_from_json(c["projection"]));
    tape().clear();
    // Float32 on both sides through up to 4 steps of matmuls and norms over
    // ≤ 66 units, values of order 1: differences of ~1e-6; 1e-5 + 1e-4·|b|.
    test::all_close(out.value(), test::tensor_from_json(c["output"]), 1e-5f, 1e-4f, name + " output");
    test::all_close(xv.grad(), test::tensor_from_json(c["grad_x"]), 1e-5f, 1e-4f, name + " grad x");
    test::all_close(h0.grad(), test::tensor_from_json(c["grad_h0"]), 1e-5f, 1e-4f, name + " grad h0");
    for (auto& [pname, p] : params) {
      const std::string key = pname.substr(std::string("cell.").size());
      test::all_close(p.grad(), test::tensor_from_json(c["grad_params"][key]), 1e-5f, 1e-4f, name + " grad " + pname);
    }
  }
}

TEST_CASE("GRU layer: gradient check through time with a normalized cell") {
  for (const char* kind : {"none", "rmsnorm", "layernorm"}) {
    NormOptions norm;
    norm.kind = parse_norm_kind(kind);
    Generator gen(3);
    GRUInit init{.stddev = 0.5f, .orthogonal_recurrent = true};
    GRU gru(3, 4, norm, gen, true, init);
    Tensor mask = Tensor::from(Shape{3, 2}, {1, 1, 1, 1, 1, 0});
    GradCheckResult r = gradcheck([&](const std::vector<Var>& v) { return gru.forward(v[0], mask); },
                                  {normal(Shape{3, 2, 3}, 0.0f, 1.0f, gen)});
    CHECK_MESSAGE(r.ok, kind << ": " << r.report);
    tape().clear();
  }
}

TEST_CASE("GRU names, direction and padding") {
  NormOptions norm;
  norm.kind = NormKind::RMSNorm;
  Generator gen(4);
  BiGRU bi(3, 5, norm, gen);
  auto names = bi.named_parameters();
  CHECK(names[0].first == "forward.cell.weight_x_gates");
  bool found = false;
  for (auto& [n, _] : names) found = found || n == "backward.cell.norm_h_cand.gain";
  CHECK(found);
  // Orthogonal recurrent blocks: UᵀU = I for each H×H block.
  Tensor u = bi.forward_gru->cell->weight_h_cand.value();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) {
      float dotp = 0;
      for (int k = 0; k < 5; ++k) dotp += u.at({k, i}) * u.at({k, j});
      CHECK(dotp == doctest::Approx(i == j ? 1.0f : 0.0f).epsilon(1e-4));
    }
  // Batch item 1 has length 2 of 4: its reverse state at step 0 must equal
  // running the reverse GRU over its first two steps alone.
  NoGradGuard no_grad;
  Tensor x = normal(Shape{4, 2, 3}, 0.0f, 1.0f, gen);
  Tensor mask = Tensor::from(Shape{4, 2}, {1, 1, 1, 1, 1, 0, 1, 0});
  Tensor full = bi.forward(constant(x), mask).value();
  CHECK(full.shape() == Shape{4, 2, 10});
  Tensor short_x = Tensor::empty(Shape{2, 1, 3});
  for (int t = 0; t < 2; ++t)
    for (int e = 0; e < 3; ++e) short_x.data()[t * 3 + e] = x.at({t, 1, e});
  Tensor alone = bi.backward_gru->forward(constant(short_x)).value();
  for (int j = 0; j < 5; ++j) CHECK(full.at({0, 1, 5 + j}) == doctest::Approx(alone.at({0, 0, j})).epsilon(1e-6));
  // The forward state is carried through the padding.
  for (int j = 0; j < 5; ++j) CHECK(full.at({3, 1, j}) == full.at({1, 1, j}));
}

TEST_CASE("conditional GRU decoder steps against PyTorch (plain, layernorm, rmsnorm)") {
  nlohmann::json ref = test::load_reference("gru.json");
  for (const auto& c : ref["cgru_cases"]) {
    const std::string name = c["name"];
    INFO(name);
    Tensor y = test::tensor_from_json(c["y"]), ctx = test::tensor_from_json(c["context"]);
    Tensor s0 = test::tensor_from_json(c["s0"]);
    const int64_t steps = y.dim(0), batch = y.dim(1), hidden = s0.dim(1);
    NormOptions norm;
    norm.kind = parse_norm_kind(c["norm"].get<std::string>());
    norm.eps = ref["eps"];
    Generator gen(0);
    ConditionalGRU cgru(y.dim(2), hidden, ctx.dim(2), c["attention_size"].get<int64_t>(), norm, gen);
    auto params = cgru.named_parameters();
    REQUIRE(params.size() == c["params"].size());
    for (auto& [pname, p] : params) {
      REQUIRE_MESSAGE(c["params"].contains(pname), "no reference for parameter " << pname);
      p.value().copy_from(test::tensor_from_json(c["params"][pname]));
      p.zero_grad();
    }
    Var yv(y, true), cv(ctx, true), state(s0, true);
    const Var s_start = state;
    Tensor source_mask = test::tensor_from_json(c["source_mask"]);
    Tensor target_mask = test::tensor_from_json(c["target_mask"]);
    GRUCell::InputTerms terms = cgru.project_targets(yv);
    Var projected = cgru.attention->precompute(cv);
    std::vector<Var> outputs;
    for (int64_t t = 0; t < steps; ++t) {
      auto at = [&](const Var& seq) { return reshape(slice(seq, 0, t, t + 1), {batch, seq.dim(2)}); };
      Tensor step_mask = Tensor::from(Shape{batch}, std::span<const float>(target_mask.data() + t * batch, batch));
      ConditionalGRU::Step out = cgru.step(at(terms.gates), at(terms.candidate), state, cv, projected, source_mask,
                                           step_mask);
      state = out.state;
      outputs.push_back(concat({out.state, out.context}, 1));
    }
    Var out = stack(outputs, 0);
    tape().backward(out, test::tensor_from_json(c["projection"]));
    tape().clear();
    // As for the GRU layer: float32 through 3 steps of two cells, attention
    // and norms over ≤ 12 units; 1e-5 + 1e-4·|b|.
    test::all_close(out.value(), test::tensor_from_json(c["output"]), 1e-5f, 1e-4f, name + " output");
    test::all_close(yv.grad(), test::tensor_from_json(c["grad_y"]), 1e-5f, 1e-4f, name + " grad y");
    test::all_close(cv.grad(), test::tensor_from_json(c["grad_context"]), 1e-5f, 1e-4f, name + " grad context");
    Var s_first = s_start;
    test::all_close(s_first.grad(), test::tensor_from_json(c["grad_s0"]), 1e-5f, 1e-4f, name + " grad s0");
    for (auto& [pname, p] : params)
      test::all_close(p.grad(), test::tensor_from_json(c["grad_params"][pname]), 1e-5f, 1e-4f, name + " grad " + pname);
  }
}
