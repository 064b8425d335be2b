// Attention: Bahdanau's MLP attention (its fused weights op against the same
// function from primitive ops, gradient checks, masks) and multi-head
// attention, both against PyTorch (tests/layer_references.h), and their
// parameter names.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "rmsgrad/autograd/attention_ops.h"
#include "rmsgrad/layers/attention.h"
#include "rmsgrad/rmsgrad.h"
#include "cell_norm_cases.h"
#include "layer_references.h"
#include "test_util.h"

using namespace rg;
using namespace rg::test;

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
  for (const CellNormCase& c : kCellNorms) {
    INFO(c.name);
    Generator gen(11);
    RowNorm norm = cell_norm(c, 5, gen);
    std::vector<Tensor> in{normal(Shape{4, 3, 5}, 0.0f, 1.0f, gen), normal(Shape{3, 5}, 0.0f, 1.0f, gen),
                           normal(Shape{1, 5}, 0.0f, 1.0f, gen), normal(Shape{1}, 0.0f, 1.0f, gen)};
    GradCheckResult r = gradcheck(
        [&](const std::vector<Var>& v) {
          size_t next = 4;
          return bahdanau_weights(v[0], v[1], bind_leaves(norm, v, next), v[2], v[3], mask);
        },
        with_leaf_values(in, {&norm}));
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

TEST_CASE("head_scores and head_mix: gradient check, and the heads split, multiplied and merged by ops") {
  // B = 2, Tq = 3, Tk = 4, H = 2 heads of d = 3.
  Generator gen(13);
  const Tensor q = normal(Shape{2, 3, 6}, 0.0f, 1.0f, gen), k = normal(Shape{2, 4, 6}, 0.0f, 1.0f, gen);
  const Tensor w = normal(Shape{2, 2, 3, 4}, 0.0f, 1.0f, gen), v = normal(Shape{2, 4, 6}, 0.0f, 1.0f, gen);
  const GemmLibrary before = gemm_library();
  for (GemmLibrary library : {GemmLibrary::OpenBLAS, GemmLibrary::OneDNN}) {
    if (library == GemmLibrary::OneDNN && !onednn_available()) continue;
    set_gemm_library(library);
    INFO(gemm_library_name(library));
    GradCheckResult scores = gradcheck([](const std::vector<Var>& x) { return head_scores(x[0], x[1], 2); }, {q, k});
    CHECK_MESSAGE(scores.ok, scores.report);
    GradCheckResult mix = gradcheck([](const std::vector<Var>& x) { return head_mix(x[0], x[1], 2); }, {w, v});
    CHECK_MESSAGE(mix.ok, mix.report);
  }
  set_gemm_library(before);
  // The same function as the heads copied out to [B·H, T, d], a batched
  // product, and the heads merged back. Loss Σ r ⊙ mix + Σ t ⊙ scores with
  // constant r and t, so every value and gradient is a sum of at most 4
  // products of N(0, 1) draws (|x| < 3 here): two such sums in different
  // orders differ by at most 2·(4 + 2)·2⁻²⁴·36 < 3e-5.
  auto split = [](const Var& x, int64_t steps) {
    return reshape(permute(reshape(x, {2, steps, 2, 3}), {0, 2, 1, 3}), {4, steps, 3});
  };
  const Var r = constant(normal(Shape{2, 3, 6}, 0.0f, 1.0f, gen));
  const Var t = constant(normal(Shape{2, 2, 3, 4}, 0.0f, 1.0f, gen));
  Var qv = parameter(q.clone()), kv = parameter(k.clone()), wv = parameter(w.clone()), vv = parameter(v.clone());
  Var qc = parameter(q.clone()), kc = parameter(k.clone()), wc = parameter(w.clone()), vc = parameter(v.clone());
  Var mix = head_mix(wv, vv, 2), scores = head_scores(qv, kv, 2);
  Var mixed = reshape(permute(reshape(matmul(reshape(wc, {4, 3, 4}), split(vc, 4)), {2, 2, 3, 3}), {0, 2, 1, 3}),
                      {2, 3, 6});
  Var product = reshape(matmul(split(qc, 3), split(kc, 4), false, true), {2, 2, 3, 4});
  CHECK(max_abs_diff(mix.value(), mixed.value()) < 3e-5f);
  CHECK(max_abs_diff(scores.value(), product.value()) < 3e-5f);
  (sum(mix * r) + sum(scores * t)).backward();
  (sum(mixed * r) + sum(product * t)).backward();
  for (auto [mine, theirs] : {std::pair{qv, qc}, {kv, kc}, {wv, wc}, {vv, vc}})
    CHECK(max_abs_diff(mine.grad(), theirs.grad()) < 3e-5f);
  tape().clear();
  CHECK_THROWS_AS(head_scores(constant(q), constant(k), 4), Error);                    // 6 does not split into 4
  CHECK_THROWS_AS(head_mix(constant(w), constant(normal(Shape{2, 5, 6}, 0.0f, 1.0f, gen)), 2), Error);  // Tk 4 ≠ 5
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
    std::vector<std::pair<std::string, Var>> inputs{{"query", query}, {"key", key}, {"value", value}};
    if (causal) inputs.resize(1);  // key and value are the query
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
