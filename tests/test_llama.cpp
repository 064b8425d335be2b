// The decoder-only pieces and the LLaMA-style model: the rotary op
// (autograd/rotary.h) against HF's apply_rotary_pos_emb and by gradient check;
// the decoder-only block and the GELU, SwiGLU, rotary, bias-free options of
// the Transformer layers (layers/transformer.h); and models/llama.h against a PyTorch twin
// (logits, loss, every gradient, one Adam step), by gradient check over every
// parameter, its cache against the full forward, causality, tied weights,
// save / load and a training smoke test. The references are float64, written
// by tests/reference/make_llama_refs.py.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rmsgrad/autograd/gradcheck.h"
#include "rmsgrad/autograd/rotary.h"
#include "rmsgrad/layers/save_load.h"
#include "rmsgrad/layers/transformer.h"
#include "rmsgrad/models/llama.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;

namespace {

Indices indices_from_json(const nlohmann::json& j) {
  return Indices(Shape(j.at("shape").get<std::vector<int64_t>>()), j.at("data").get<std::vector<int32_t>>());
}

// Copies the reference parameters into the module by name, zeroing their
// gradients; every parameter must have a reference and vice versa.
void load_params(Module& m, const nlohmann::json& params) {
  auto named = m.named_parameters();
  REQUIRE(named.size() == params.size());
  for (auto& [name, p] : named) {
    REQUIRE_MESSAGE(params.contains(name), "no reference for parameter " << name);
    p.value().copy_from(test::tensor_from_json(params[name]));
    p.zero_grad();
  }
}

// Moves every parameter off its init by N(0, σ²) noise, so that no gain is
// exactly 1 and no weight is near 0.
void perturb(Module& m, Generator& gen, float sigma = 0.2f) {
  for (auto& [name, p] : m.named_parameters()) p.value().add_(normal(p.shape(), 0.0f, sigma, gen));
}

bool has_name(const Module& m, const std::string& name) {
  for (const auto& [n, _] : m.named_parameters())
    if (n == name) return true;
  return false;
}

Indices random_ids(int64_t batch, int64_t steps, int64_t vocab, Generator& gen) {
  std::vector<int32_t> ids(static_cast<size_t>(batch * steps));
  for (int32_t& id : ids) id = static_cast<int32_t>(gen.randint(vocab));
  return Indices(Shape{batch, steps}, std::move(ids));
}

// Columns [from, to) of ids [B, T].
Indices columns(const Indices& ids, int64_t from, int64_t to) {
  const int64_t batch = ids.shape[0], steps = ids.shape[1];
  std::vector<int32_t> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = from; t < to; ++t) out.push_back(ids.values[static_cast<size_t>(b * steps + t)]);
  return Indices(Shape{batch, to - from}, std::move(out));
}

// Positions [from, to) of y [B, T, N].
Tensor positions(const Tensor& y, int64_t from, int64_t to) {
  NoGradGuard no_grad;
  return slice(constant(y), 1, from, to).value().clone();
}

Var next_token_loss(Llama& model, const Indices& ids, const Indices& targets) {
  Var logits = model.forward(ids);
  return cross_entropy(reshape(logits, {-1, model.options().vocab}), Indices(targets.values));
}

LlamaOptions tiny_llama(int64_t vocab, NormKind norm, bool tie) {
  return LlamaOptions{.vocab = vocab, .layers = 2, .model_size = 8, .heads = 2, .ffn_size = 8,
                      .norm = NormOptions{.kind = norm, .p = 0.5f}, .tie_embeddings = tie, .init_stddev = 0.4f};
}

TransformerLayerOptions decoder_only(NormPosition position, FeedForwardKind ffn = FeedForwardKind::SwiGLU) {
  TransformerLayerOptions o;
  o.model_size = 8;
  o.heads = 2;
  o.ffn_size = 12;
  o.norm = NormOptions{.kind = NormKind::RMSNorm};
  o.norm_position = position;
  o.dropout = 0.0f;
  o.feed_forward = ffn;
  o.bias = false;
  o.rotary_base = 100.0f;
  return o;
}

}  // namespace

// ---- the rotary op ----

TEST_CASE("rotary against HF's apply_rotary_pos_emb (float64), value and gradient; position 100000 included") {
  // y₁ = x₁c − x₂s with c, s the double-precision cos and sin rounded once to
  // float (≤ 6e-8 relative each), two products and a difference, each rounded:
  // at most ~4 float ulps of the larger product, |x| < 3 here, so < 1e-6
  // absolute (observed 2.4e-7); the gradient is the same arithmetic. Angles
  // computed in float32, as HF computes them, would move a cosine at position
  // 100000 by 4e-6, over this bound.
  nlohmann::json ref = test::load_reference("llama.json");
  REQUIRE(ref["rotary"].size() == 3);
  for (const auto& c : ref["rotary"]) {
    INFO(c["name"].get<std::string>());
    Var x(test::tensor_from_json(c["x"]), true);
    Var y = rotary(x, c["positions"].get<std::vector<int64_t>>(), c["base"].get<float>());
    sum(y * constant(test::tensor_from_json(c["projection"]))).backward();
    test::all_close(y.value(), test::tensor_from_json(c["output"]), 1e-6f, 0.0f, "output");
    test::all_close(x.grad(), test::tensor_from_json(c["grad_x"]), 1e-6f, 0.0f, "grad x");
  }
}

TEST_CASE("rotary: gradient checks (used once and twice), properties, bad input") {
  Generator gen(1);
  Tensor x = normal(Shape{2, 3, 2, 6}, 0.0f, 1.0f, gen);
  const std::vector<int64_t> scattered{4, 0, 31};
  const std::vector<std::pair<const char*, GradCheckFn>> cases = {
      {"from 0", [](const std::vector<Var>& v) { return rotary(v[0]); }},
      {"from 5, base 100", [](const std::vector<Var>& v) { return rotary(v[0], 5, 100.0f); }},
      {"scattered positions", [&](const std::vector<Var>& v) { return rotary(v[0], scattered); }},
  };
  for (const auto& [name, f] : cases) {
    GradCheckResult once = gradcheck(f, {x});
    CHECK_MESSAGE(once.ok, name << ": " << once.report);
    // The second use adds into the gradient the first one wrote.
    GradCheckResult twice = gradcheck([&](const std::vector<Var>& v) { return f(v) + f(v); }, {x});
    CHECK_MESSAGE(twice.ok, name << " (used twice): " << twice.report);
  }

  NoGradGuard no_grad;
  // Position 0 turns nothing: cos 0 = 1 and sin 0 = 0 exactly.
  Tensor at0 = rotary(constant(x), std::vector<int64_t>{0, 0, 0}).value();
  CHECK(max_abs_diff(at0, x) == 0.0f);
  // A rotation keeps each pair's length (to float rounding).
  Tensor y = rotary(constant(x), 7).value();
  for (int64_t r = 0; r < 12; ++r)
    for (int64_t i = 0; i < 3; ++i) {
      const float* a = x.data() + r * 6;
      const float* b = y.data() + r * 6;
      CHECK(std::hypot(b[i], b[i + 3]) == doctest::Approx(std::hypot(a[i], a[i + 3])).epsilon(1e-6));
    }
  // The dot product of a query at p and a key at s depends on s − p only:
  // moving both by 40 leaves it (to float rounding).
  Tensor q = normal(Shape{1, 1, 1, 8}, 0.0f, 1.0f, gen), k = normal(Shape{1, 1, 1, 8}, 0.0f, 1.0f, gen);
  auto score = [&](int64_t p, int64_t s) { return sum(rotary(constant(q), p) * rotary(constant(k), s)).item(); };
  CHECK(score(3, 1) == doctest::Approx(score(43, 41)).epsilon(1e-5));
  CHECK(score(0, 9) == doctest::Approx(score(40, 49)).epsilon(1e-5));
  CHECK(std::fabs(score(3, 1) - score(3, 2)) > 1e-3);

  test::check_error([&] { rotary(constant(normal(Shape{2, 3, 2, 5}, 0.0f, 1.0f, gen))); }, "rotary", "Dh even");
  test::check_error([&] { rotary(constant(normal(Shape{3, 2, 6}, 0.0f, 1.0f, gen))); }, "rotary", "[3, 2, 6]");
  test::check_error([&] { rotary(constant(x), std::vector<int64_t>{0, 1}); }, "rotary", "2 positions");
  test::check_error([&] { rotary(constant(x), 0, 0.0f); }, "rotary", "base");
}

// ---- the decoder-only block and the Transformer layers' options ----

TEST_CASE("DecoderOnlyBlock with GELU against torch.nn.TransformerEncoderLayer (causal src_mask, key padding)") {
  // Tolerance as test_transformer.cpp argues for the same layers: the
  // reference is float64, so the difference is our float32 rounding, a few
  // ulps per op over GEMMs with K ≤ 16 and norms over 8 units.
  nlohmann::json ref = test::load_reference("llama.json");
  REQUIRE(ref["encoder_layers"].size() == 2);
  for (const auto& c : ref["encoder_layers"]) {
    INFO(c["name"].get<std::string>());
    TransformerLayerOptions o;
    o.model_size = 8;
    o.heads = 2;
    o.ffn_size = 16;
    o.norm.kind = parse_norm_kind(c["norm"].get<std::string>());
    o.norm_position = parse_norm_position(c["position"].get<std::string>());
    o.dropout = 0.0f;
    o.feed_forward = FeedForwardKind::GELU;
    Generator init_gen(0), noise_gen(1);
    DecoderOnlyBlock layer(o, init_gen, noise_gen);
    load_params(layer, c["params"]);
    Var x(test::tensor_from_json(c["x"]), true);
    Var y = layer.forward(x, test::tensor_from_json(c["key_mask"]));
    sum(y * constant(test::tensor_from_json(c["projection"]))).backward();
    test::all_close(y.value(), test::tensor_from_json(c["output"]), 1e-5f, 1e-4f, "output");
    test::all_close(x.grad(), test::tensor_from_json(c["grad_x"]), 1e-5f, 1e-4f, "grad x");
    for (auto& [name, p] : layer.named_parameters())
      test::all_close(p.grad(), test::tensor_from_json(c["grad_params"][name]), 1e-5f, 1e-4f, "grad " + name);
  }
}

TEST_CASE("Transformer layer options: SwiGLU and GELU feed-forwards against their formulas; bias = false; names") {
  Generator init_gen(2), noise_gen(3), gen(4);
  TransformerLayerOptions o = decoder_only(NormPosition::Pre);
  o.rotary_base = 0.0f;
  TransformerEncoderLayer swiglu(o, init_gen, noise_gen);
  CHECK(swiglu.named_parameters().size() == 4 + 3 + 2);  // q, k, v, out; W₁ W₂ W₃; two gains
  for (const char* n : {"self_attn.q_proj.weight", "self_attn.out_proj.weight", "linear1.weight", "linear2.weight",
                        "linear3.weight", "norm1.gain", "norm2.gain"})
    CHECK_MESSAGE(has_name(swiglu, n), n);
  for (const auto& [n, p] : swiglu.named_parameters()) CHECK_MESSAGE(n.find("bias") == std::string::npos, n);

  // The defaults are the layer as it was: ReLU, biases, no linear3.
  TransformerLayerOptions plain = o;
  plain.feed_forward = FeedForwardKind::ReLU;
  plain.bias = true;
  TransformerEncoderLayer relu_layer(plain, init_gen, noise_gen);
  CHECK(relu_layer.linear3 == nullptr);
  CHECK(relu_layer.named_parameters().size() == 14);
  CHECK(TransformerLayerOptions{}.feed_forward == FeedForwardKind::ReLU);
  CHECK(TransformerLayerOptions{}.bias);
  CHECK(TransformerLayerOptions{}.rotary_base == 0.0f);

  // Pre-norm layer minus its attention half is x + FFN(norm2(x)): compare
  // with the formula composed here, for SwiGLU and GELU.
  perturb(swiglu, gen);
  o.feed_forward = FeedForwardKind::GELU;
  o.bias = true;
  TransformerEncoderLayer gelu_layer(o, init_gen, noise_gen);
  perturb(gelu_layer, gen);
  NoGradGuard no_grad;
  Var x = constant(normal(Shape{2, 3, 8}, 0.0f, 1.0f, gen));
  for (TransformerEncoderLayer* layer : {&swiglu, &gelu_layer}) {
    Var in = layer->norm1->forward(x);
    Var h = x + layer->self_attn->forward(in, in, in).context;
    Var n = layer->norm2->forward(h);
    Var hidden = layer->linear3 ? silu(layer->linear1->forward(n)) * layer->linear3->forward(n)
                                : gelu(layer->linear1->forward(n));
    Var want = h + layer->linear2->forward(hidden);
    CHECK(max_abs_diff(layer->forward(x).value(), want.value()) == 0.0f);
  }
  CHECK(parse_feed_forward("swiglu") == FeedForwardKind::SwiGLU);
  CHECK(feed_forward_name(FeedForwardKind::GELU) == "gelu");
  test::check_error([] { parse_feed_forward("tanh"); }, "feed-forward", "relu, gelu or swiglu");
}

TEST_CASE("DecoderOnlyBlock with rotary and SwiGLU: step() equals forward(), gradient checks, bad input") {
  for (NormPosition position : {NormPosition::Post, NormPosition::Pre}) {
    INFO(norm_position_name(position));
    Generator init_gen(5), noise_gen(6), gen(7);
    DecoderOnlyBlock layer(decoder_only(position), init_gen, noise_gen);
    perturb(layer, gen);
    Tensor x = normal(Shape{2, 6, 8}, 0.0f, 1.0f, gen);
    {
      NoGradGuard no_grad;
      Tensor full = layer.forward(constant(x)).value();
      // A block of three positions first (causal among themselves), then one at a time.
      KeyValues cache;
      Tensor first = layer.step(constant(positions(x, 0, 3)), cache).value();
      test::all_close(first, positions(full, 0, 3), 1e-6f, 1e-5f, "first block");
      for (int64_t t = 3; t < 6; ++t) {
        Tensor y = layer.step(constant(positions(x, t, t + 1)), cache).value();
        CHECK(cache.length() == t + 1);
        test::all_close(y, positions(full, t, t + 1), 1e-6f, 1e-5f, "step " + std::to_string(t));
      }
      test::check_error([&] { layer.step(constant(positions(x, 0, 2)), cache); }, "DecoderOnlyBlock",
                        "6 positions cached");
    }
    GradCheckResult r = gradcheck([&](const std::vector<Var>& v) { return layer.forward(v[0]); },
                                  {normal(Shape{2, 4, 8}, 0.0f, 1.0f, gen)});
    CHECK_MESSAGE(r.ok, r.report);
    tape().clear();
  }
  // Rotary needs an even head size.
  Generator init_gen(8), noise_gen(9);
  TransformerLayerOptions o = decoder_only(NormPosition::Pre);
  o.heads = 4;  // head size 2 is even: fine
  CHECK_NOTHROW(DecoderOnlyBlock(o, init_gen, noise_gen));
  o.model_size = 12;  // head size 3
  test::check_error([&] { DecoderOnlyBlock odd(o, init_gen, noise_gen); }, "MultiHeadAttention", "even head size");
}

TEST_CASE("rotary attention: scores see relative positions; the decoder layer's step() with rotary equals forward()") {
  Generator gen(10);
  MultiHeadAttention attention(8, 2, gen, {.bias = false, .rotary_base = 10000.0f});
  perturb(attention, gen);
  NoGradGuard no_grad;
  Var x = constant(normal(Shape{2, 5, 8}, 0.0f, 1.0f, gen));
  Tensor at0 = attention.forward(x, x, x, {}, true).context.value();
  // Every position moved by 37: the same attention (to float rounding).
  Tensor at37 = attention.attend(x, attention.project(x, x, 37), {}, true, 37).context.value();
  test::all_close(at37, at0, 1e-5f, 1e-4f, "shifted by 37");
  // Queries and keys moved apart differ.
  Tensor apart = attention.attend(x, attention.project(x, x, 3), {}, true, 0).context.value();
  CHECK(max_abs_diff(apart, at0) > 1e-3f);

  for (const NormPosition position : {NormPosition::Post, NormPosition::Pre}) {
    Generator init_gen(11), noise_gen(12);
    TransformerLayerOptions o = decoder_only(position, FeedForwardKind::GELU);
    o.bias = true;
    TransformerDecoderLayer decoder(o, init_gen, noise_gen);
    CHECK(decoder.linear3 == nullptr);
    perturb(decoder, gen);
    Tensor y = normal(Shape{2, 4, 8}, 0.0f, 1.0f, gen), memory = normal(Shape{2, 3, 8}, 0.0f, 1.0f, gen);
    Tensor full = decoder.forward(constant(y), constant(memory)).value();
    DecoderLayerCache cache = decoder.start(constant(memory));
    for (int64_t t = 0; t < 4; ++t)
      test::all_close(decoder.step(constant(positions(y, t, t + 1)), cache).value(), positions(full, t, t + 1), 1e-6f,
                      1e-5f, "decoder step " + std::to_string(t));
  }
}

// ---- the model (the tests that make an optimizer come last: after one
// exists, a backward without one warns about every parameter) ----

TEST_CASE("Llama: gradient check of the loss over every parameter (tied and untied; rmsnorm, prmsnorm, layernorm)") {
  // Central differences of the float32 loss (≈ 2) with h = 1e-3: its rounding
  // (a few 1e-7) becomes ≤ ~5e-4 in the difference quotient, and the O(h²)
  // truncation ~1e-6; gradients here are 1e-3 to 1. Hence atol 2e-3 and
  // rtol 1e-2, near gradcheck's own (autograd/gradcheck.h); a wrong gradient
  // is off by its own size. Tied, the embedding's gradient sums its two uses.
  struct Case {
    NormKind norm;
    bool tie;
  };
  const std::vector<Case> cases{{NormKind::RMSNorm, false}, {NormKind::PRMSNorm, true}, {NormKind::LayerNorm, true}};
  for (const Case& k : cases) {
    INFO(norm_name(k.norm), (k.tie ? " tied" : " untied"));
    Generator init(20), gen(21);
    Llama model(tiny_llama(7, k.norm, k.tie), init);
    for (auto& [name, p] : model.named_parameters())
      if (name.find("norm") != std::string::npos) p.value().add_(normal(p.shape(), 0.0f, 0.2f, gen));
    const Indices ids = random_ids(2, 5, 7, gen), targets = random_ids(2, 5, 7, gen);
    model.zero_grad();
    next_token_loss(model, ids, targets).backward();
    int64_t checked = 0, failed = 0;
    for (auto& [name, p] : model.named_parameters()) {
      float* w = p.value().data();
      for (int64_t i = 0; i < p.numel(); ++i) {
        const float kept = w[i];
        const float up = kept + 1e-3f, down = kept - 1e-3f;
        double plus, minus;
        {
          NoGradGuard no_grad;
          w[i] = up;
          plus = next_token_loss(model, ids, targets).item();
          w[i] = down;
          minus = next_token_loss(model, ids, targets).item();
          w[i] = kept;
        }
        const double numerical = (plus - minus) / (static_cast<double>(up) - static_cast<double>(down));
        const double analytic = p.grad().data()[i];
        ++checked;
        if (!(std::fabs(analytic - numerical) <= 2e-3 + 1e-2 * std::fabs(numerical)) && failed++ < 5)
          FAIL_CHECK(name << " element " << i << ": analytic " << analytic << ", numerical " << numerical);
      }
    }
    CHECK(failed == 0);
    CHECK(checked == model.parameter_count());
  }
}

TEST_CASE("Llama: the cache gives the full forward's logits at every position; generate() samples what full "
          "forwards would") {
  // The cached positions do the full forward's arithmetic with other GEMM
  // shapes (one row at a time, keys of the prefix only, where the full
  // forward adds the masked keys' exact zeros): the same values up to the
  // order of float sums, a few ulps of logits of order 1.
  for (const bool tie : {false, true}) {
    INFO((tie ? "tied" : "untied"));
    Generator init(30), gen(31);
    LlamaOptions o{.vocab = 13, .layers = 2, .model_size = 16, .heads = 4, .ffn_size = 24, .tie_embeddings = tie,
                   .init_stddev = 0.3f};
    Llama model(o, init);
    const Indices ids = random_ids(2, 9, 13, gen);
    NoGradGuard no_grad;
    Tensor full = model.forward(ids).value();  // [2, 9, 13]
    LlamaCache cache;
    for (int64_t t = 0; t < 9; ++t) {
      Tensor y = model.forward(columns(ids, t, t + 1), cache).value();
      CHECK(cache.length() == t + 1);
      test::all_close(y, positions(full, t, t + 1), 1e-5f, 1e-5f, "position " + std::to_string(t));
    }
    // A prompt of four in one block, then one at a time.
    LlamaCache block;
    test::all_close(model.forward(columns(ids, 0, 4), block).value(), positions(full, 0, 4), 1e-5f, 1e-5f,
                    "block of 4");
    for (int64_t t = 4; t < 9; ++t)
      test::all_close(model.forward(columns(ids, t, t + 1), block).value(), positions(full, t, t + 1), 1e-5f, 1e-5f,
                      "after the block, position " + std::to_string(t));
    test::check_error([&] { model.forward(columns(ids, 0, 2), block); }, "DecoderOnlyBlock", "cached");

    // generate() against sampling from the last position of full forwards of
    // the growing sequence, with the same draws: greedy, then temperature
    // 0.8 with the top 5, then the whole vocabulary.
    const std::vector<int32_t> prompt{3, 1, 4};
    for (const auto& [temperature, top_k] : std::vector<std::pair<float, int64_t>>{{0.0f, 0}, {0.8f, 5}, {1.0f, 0}}) {
      INFO("temperature ", temperature, " top_k ", top_k);
      Generator draws(40), same_draws(40);
      const std::vector<int32_t> sampled = model.generate(prompt, 8, temperature, top_k, draws);
      std::vector<int32_t> sequence = prompt, expected;
      for (int i = 0; i < 8; ++i) {
        const int64_t n = static_cast<int64_t>(sequence.size());
        Tensor logits = model.forward(Indices(Shape{1, n}, sequence)).value();
        Tensor last = Tensor::from(Shape{13}, std::span<const float>(logits.data() + (n - 1) * 13, 13));
        expected.push_back(sample_token(last, temperature, top_k, same_draws));
        sequence.push_back(expected.back());
      }
      CHECK(sampled == expected);
    }

    // Within a training window of 4 positions: past it, each token comes from
    // the 3 before it, as a full forward of those 4 alone gives it.
    LlamaOptions windowed = o;
    windowed.context = 4;
    Generator init_again(30);
    Llama short_sighted(windowed, init_again);
    for (const auto& [temperature, top_k] : std::vector<std::pair<float, int64_t>>{{0.0f, 0}, {0.8f, 5}}) {
      INFO("window 4, temperature ", temperature, " top_k ", top_k);
      Generator draws(41), same_draws(41);
      const std::vector<int32_t> sampled = short_sighted.generate(prompt, 10, temperature, top_k, draws);
      std::vector<int32_t> sequence = prompt, expected;
      for (int i = 0; i < 10; ++i) {
        const int64_t n = std::min<int64_t>(static_cast<int64_t>(sequence.size()), 4);
        const std::vector<int32_t> last_window(sequence.end() - n, sequence.end());
        Tensor logits = short_sighted.forward(Indices(Shape{1, n}, last_window)).value();
        Tensor last = Tensor::from(Shape{13}, std::span<const float>(logits.data() + (n - 1) * 13, 13));
        expected.push_back(sample_token(last, temperature, top_k, same_draws));
        sequence.push_back(expected.back());
      }
      CHECK(sampled == expected);
    }
  }
}

TEST_CASE("Llama: causal — changing a later token leaves every earlier logit unchanged, bit for bit") {
  // Earlier rows never read the later ones: GEMMs compute each row alone, the
  // softmax gives the later keys weight exactly 0, and 0·v adds nothing.
  for (const NormKind norm : {NormKind::RMSNorm, NormKind::LayerNorm}) {
    INFO(norm_name(norm));
    Generator init(50), gen(51);
    Llama model(tiny_llama(9, norm, true), init);
    Indices a = random_ids(2, 8, 9, gen), b = a;
    for (int64_t row = 0; row < 2; ++row) {
      int32_t& id = b.values[static_cast<size_t>(row * 8 + 5)];
      id = (id + 1 + static_cast<int32_t>(row)) % 9;
    }
    NoGradGuard no_grad;
    Tensor ya = model.forward(a).value(), yb = model.forward(b).value();
    CHECK(max_abs_diff(positions(ya, 0, 5), positions(yb, 0, 5)) == 0.0f);
    for (int64_t t = 5; t < 8; ++t) CHECK(max_abs_diff(positions(ya, t, t + 1), positions(yb, t, t + 1)) > 1e-4f);
  }
}

TEST_CASE("Llama: tied weights are one parameter under one name; untied adds lm_head; options are checked") {
  Generator init(60);
  Llama tied(tiny_llama(11, NormKind::RMSNorm, true), init), untied(tiny_llama(11, NormKind::RMSNorm, false), init);
  CHECK(tied.lm_head == nullptr);
  CHECK(untied.parameter_count() - tied.parameter_count() == 11 * 8);
  int tables = 0;
  for (const auto& [name, p] : tied.named_parameters()) tables += name.find("embed_tokens") != std::string::npos;
  CHECK(tables == 1);
  CHECK_FALSE(has_name(tied, "lm_head.weight"));
  CHECK(has_name(untied, "lm_head.weight"));
  const std::vector<std::string> expected{
      "embed_tokens.weight",           "layers.0.self_attn.q_proj.weight", "layers.0.self_attn.k_proj.weight",
      "layers.0.self_attn.v_proj.weight", "layers.0.self_attn.out_proj.weight", "layers.0.linear1.weight",
      "layers.0.linear2.weight",       "layers.0.linear3.weight",          "layers.0.norm1.gain",
      "layers.0.norm2.gain"};
  auto names = untied.named_parameters();
  REQUIRE(names.size() == 1 + 2 * 9 + 1 + 1);
  for (size_t i = 0; i < expected.size(); ++i) CHECK(names[i].first == expected[i]);
  CHECK(names[names.size() - 2].first == "norm.gain");
  CHECK(names.back().first == "lm_head.weight");
  // The default: RMSNorm with a gain only, rotary base 10000, untied.
  CHECK(LlamaOptions{}.norm.kind == NormKind::RMSNorm);
  CHECK(LlamaOptions{}.rotary_base == 10000.0f);
  CHECK_FALSE(LlamaOptions{}.tie_embeddings);

  LlamaOptions bad = tiny_llama(11, NormKind::RMSNorm, false);
  bad.vocab = 0;
  test::check_error([&] { Llama m(bad); }, "Llama", "vocabulary");
  bad = tiny_llama(11, NormKind::BatchNorm, false);
  test::check_error([&] { Llama m(bad); }, "DecoderOnlyBlock", "batchnorm");
  NoGradGuard no_grad;
  test::check_error([&] { tied.forward(Indices(Shape{4}, {1, 2, 3, 4})); }, "Llama", "[B, T]");
  test::check_error([&] { tied.generate({}, 3); }, "Llama::generate", "empty");
  test::check_error([&] { tied.generate({1}, 3, -1.0f); }, "Llama::generate", "temperature");
  test::check_error([&] { tied.generate({1}, 3, 1.0f, 12); }, "Llama::generate", "top_k");
}

TEST_CASE("Llama: save and load give back the same logits; a tied file does not load into an untied model") {
  test::TempDir dir("llama_save");
  Generator init(70), other(71), gen(72);
  const LlamaOptions o = tiny_llama(10, NormKind::PRMSNorm, true);
  Llama model(o, init);
  const Indices ids = random_ids(2, 6, 10, gen);
  save(model, dir.file("llama.safetensors"), {{"vocab", "10"}});
  Llama copy(o, other);
  NoGradGuard no_grad;
  CHECK(max_abs_diff(model.forward(ids).value(), copy.forward(ids).value()) > 1e-3f);
  Metadata meta = load(copy, dir.file("llama.safetensors"));
  CHECK(meta.at("vocab") == "10");
  CHECK(max_abs_diff(model.forward(ids).value(), copy.forward(ids).value()) == 0.0f);
  LlamaOptions untied_options = o;
  untied_options.tie_embeddings = false;
  Llama untied(untied_options, other);
  test::check_error([&] { load(untied, dir.file("llama.safetensors")); }, "", "lm_head.weight");
}

TEST_CASE("Llama against its PyTorch twin (HF's LLaMA in torch, float64): logits, loss, gradients, one Adam step") {
  // Logits, loss and gradients: float32 rounding through two blocks of GEMMs
  // with K ≤ 12, softmaxes over ≤ 6 keys and norms over 8 units, of values of
  // order 1, as in test_transformer.cpp: 1e-5 + 1e-4·|b|.
  // After one Adam step each weight has moved by u = lr·g/(|g| + ε) (the bias
  // corrections cancel at step 1). Our g is within δg = 1e-5 + 1e-4·|g| of
  // torch's, and du/dg = lr·ε/(|g| + ε)², so u is within lr·ε·δg/(|g| + ε)²
  // of torch's: under 1e-9 where |g| ≥ 1e-4, and never more than 2·lr (a
  // gradient near 0, where u is sign(g)·lr·|g|/(|g| + ε)); plus 1e-6 for the
  // weight's own rounding. The loss at the new weights then agrees to 1e-5.
  nlohmann::json ref = test::load_reference("llama.json");
  REQUIRE(ref["models"].size() == 3);
  for (const auto& c : ref["models"]) {
    INFO(c["name"].get<std::string>());
    LlamaOptions o{.vocab = c["vocab"], .layers = c["layers"], .model_size = c["model_size"], .heads = c["heads"],
                   .ffn_size = c["ffn_size"],
                   .norm = NormOptions{.kind = parse_norm_kind(c["norm"].get<std::string>()), .p = c["p"],
                                       .eps = ref["eps"]},
                   .rotary_base = c["rotary_base"], .tie_embeddings = c["tie"]};
    Llama model(o);
    load_params(model, c["params"]);
    const Indices ids = indices_from_json(c["ids"]), targets = indices_from_json(c["targets"]);
    Var logits = model.forward(ids);
    Var loss = cross_entropy(reshape(logits, {-1, o.vocab}), Indices(targets.values));
    test::all_close(logits.value(), test::tensor_from_json(c["logits"]), 1e-5f, 1e-4f, "logits");
    CHECK(loss.item() == doctest::Approx(c["loss"].get<double>()).epsilon(1e-5));
    const double lr = c["lr"];
    Adam adam(model.named_parameters(), {.lr = lr});
    model.zero_grad();
    loss.backward();
    for (auto& [name, p] : model.named_parameters())
      test::all_close(p.grad(), test::tensor_from_json(c["grad_params"][name]), 1e-5f, 1e-4f, "grad " + name);
    adam.step();
    for (auto& [name, p] : model.named_parameters()) {
      const Tensor want = test::tensor_from_json(c["params_after"][name]);
      const Tensor g = test::tensor_from_json(c["grad_params"][name]);
      for (int64_t i = 0; i < want.numel(); ++i) {
        const double a = std::fabs(g.data()[i]), dg = 1e-5 + 1e-4 * a, eps = 1e-8;
        const double bound = 1e-6 + std::min(2.0 * lr, lr * eps * dg / ((a + eps) * (a + eps)));
        if (!(std::fabs(p.value().data()[i] - want.data()[i]) <= bound)) {
          FAIL_CHECK(name << " after the Adam step: element " << i << " is " << p.value().data()[i] << ", expected "
                          << want.data()[i] << " (gradient " << g.data()[i] << ")");
          break;
        }
      }
    }
    NoGradGuard no_grad;
    CHECK(next_token_loss(model, ids, targets).item() == doctest::Approx(c["loss_after"].get<double>()).epsilon(1e-5));
  }
}

TEST_CASE("Llama: learns a tiny repeating text (training smoke test)") {
  // Every window of 17 characters of the endless repetition of the text
  // (one per starting offset: the whole batch each step) asks for the next
  // character after each of its first 16. At the start the logits are ~0.1
  // (weights N(0, 0.02²)), so the loss is ln V ≈ 2.40 to within 0.05. It
  // cannot go below the entropy that is left when the whole prefix of a
  // window is known (a prefix can start at several offsets: 't' is followed
  // by 'h', ' ' or 'e'), computed below from the text itself. After 120 Adam
  // steps the model must be within 0.15 nats of that floor, which a model
  // that had learned only which character follows which (the bigrams) could
  // not reach: the bigram floor is 0.61, the full floor 0.065 (observed:
  // 2.405 at the start, 0.066 at the end).
  const std::string text = "the cat sat on the mat. ";
  std::string chars = text;
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  const int64_t vocab = static_cast<int64_t>(chars.size()), period = static_cast<int64_t>(text.size()), steps = 16;
  auto id_at = [&](int64_t i) { return static_cast<int32_t>(chars.find(text[static_cast<size_t>(i % period)])); };
  std::vector<int32_t> inputs, targets;
  for (int64_t start = 0; start < period; ++start)
    for (int64_t t = 0; t < steps; ++t) inputs.push_back(id_at(start + t)), targets.push_back(id_at(start + t + 1));
  // The floor: at position t, the offsets that share a window's prefix
  // predict its next character in proportion to their count.
  auto bigram = [&](int64_t floor_context) {
    double total = 0.0;
    for (int64_t start = 0; start < period; ++start)
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t context = std::min<int64_t>(t + 1, floor_context);
        int64_t same_prefix = 0, same_next = 0;
        for (int64_t other = 0; other < period; ++other) {
          bool same = true;
          for (int64_t j = t + 1 - context; j <= t && same; ++j) same = id_at(start + j) == id_at(other + j);
          if (!same) continue;
          ++same_prefix;
          same_next += id_at(start + t + 1) == id_at(other + t + 1);
        }
        total -= std::log(static_cast<double>(same_next) / static_cast<double>(same_prefix));
      }
    return total / static_cast<double>(period * steps);
  };
  const double floor = bigram(steps), bigram_floor = bigram(1);
  CAPTURE(floor);
  CAPTURE(bigram_floor);
  REQUIRE(bigram_floor > floor + 0.3);

  Generator init(80);
  Llama model(LlamaOptions{.vocab = vocab, .layers = 2, .model_size = 32, .heads = 4, .ffn_size = 64}, init);
  Adam adam(model.named_parameters(), {.lr = 1e-2});
  const Indices x(Shape{period, steps}, inputs), y(targets);
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 120; ++step) {
    Var loss = cross_entropy(reshape(model.forward(x), {-1, vocab}), y);
    model.zero_grad();
    loss.backward();
    adam.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  CAPTURE(first);
  CAPTURE(last);

  CHECK(std::fabs(first - std::log(static_cast<double>(vocab))) < 0.05);
  CHECK(last < floor + 0.15);
}
