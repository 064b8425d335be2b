// The Transformer's layers (layers/transformer.h): the encoder and decoder
// layers, post- and pre-norm, with LayerNorm against torch.nn.Transformer-
// EncoderLayer / TransformerDecoderLayer and with RMSNorm and pRMSNorm against
// the same torch layers with the formula for their norms (reference file
// written in float64 by tests/reference/make_transformer_refs.py), forward and
// every gradient; incremental decoding against forward(); gradient checks with
// padding and causal masks; sinusoidal positions, dropout and bad input.
//
// Tolerance against the references, 1e-5 + 1e-4·|b| (as tests/layer_references.h):
// the reference is float64, so the whole difference is our float32 rounding.
// A layer is two or three sublayers of small GEMMs (K ≤ 16), a softmax over ≤ 5
// keys and norms over 8 (or 4) units, with values and gradients of order 1;
// each op adds a few ulps (~1e-7 relative), and the norms' backward, the only
// amplifier, divides by an RMS of order 1, so the differences stay near 1e-6;
// parameter gradients sum ≤ 10 rows of such terms, which can cancel to a
// small result (the largest difference seen, ~2e-6, is in a gradient of
// 0.05). Every case also passes at a fifth of the bound (2e-6 + 2e-5·|b|).
// No FFN unit of a reference case lies within 1e-3 of relu's kink (the
// script checks), so our rounding cannot switch a unit.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rmsgrad/autograd/gradcheck.h"
#include "rmsgrad/layers/attention.h"
#include "rmsgrad/layers/transformer.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;

namespace {

constexpr float kAtol = 1e-5f, kRtol = 1e-4f;

using Named = std::vector<std::pair<std::string, Var>>;

TransformerLayerOptions options_of(const nlohmann::json& ref, const nlohmann::json& c) {
  TransformerLayerOptions o;
  o.model_size = c["model_size"];
  o.ffn_size = c["ffn_size"];
  o.heads = c["heads"];
  o.norm.kind = parse_norm_kind(c["norm"].get<std::string>());
  o.norm.eps = ref["eps"];
  o.norm.p = c["p"];
  o.norm_position = parse_norm_position(c["position"].get<std::string>());
  o.dropout = 0.0f;
  return o;
}

// Copies the reference parameters into the module by name, zeroing their
// gradients; every parameter must have a reference and vice versa.
void load_params(Module& m, const nlohmann::json& c) {
  auto params = m.named_parameters();
  REQUIRE(params.size() == c["params"].size());
  for (auto& [name, p] : params) {
    REQUIRE_MESSAGE(c["params"].contains(name), "no reference for parameter " << name);
    p.value().copy_from(test::tensor_from_json(c["params"][name]));
    p.zero_grad();
  }
}

Var input(const nlohmann::json& c, const std::string& name) {
  return Var(test::tensor_from_json(c["inputs"][name]), true);
}

Tensor mask(const nlohmann::json& c, const std::string& name) { return test::tensor_from_json(c["masks"][name]); }

// Backward of sum(output · projection), then output, input and parameter
// gradients against the reference.
void check_against_reference(const nlohmann::json& c, const Var& output, const Named& inputs, Module& m) {
  Var loss = sum(output * constant(test::tensor_from_json(c["projections"]["output"])));
  loss.backward();
  tape().clear();
  test::all_close(output.value(), test::tensor_from_json(c["outputs"]["output"]), kAtol, kRtol, "output");
  for (auto [name, v] : inputs)
    test::all_close(v.grad(), test::tensor_from_json(c["grad_inputs"][name]), kAtol, kRtol, "grad " + name);
  for (auto& [name, p] : m.named_parameters()) {
    REQUIRE_MESSAGE(c["grad_params"].contains(name), "no reference gradient for " << name);
    test::all_close(p.grad(), test::tensor_from_json(c["grad_params"][name]), kAtol, kRtol, "grad " + name);
  }
}

bool has_name(const Module& m, const std::string& name) {
  for (const auto& [n, _] : m.named_parameters())
    if (n == name) return true;
  return false;
}

// Moves every parameter off its init (gains 1, biases 0) by N(0, σ²) noise,
// so that no term of the layer is trivially 0 or 1.
void perturb(Module& m, Generator& gen, float sigma = 0.2f) {
  for (auto& [name, p] : m.named_parameters()) p.value().add_(normal(p.shape(), 0.0f, sigma, gen));
}

// [B, T] with 1 for the first lengths[b] positions of row b.
Tensor length_mask(int64_t steps, const std::vector<int64_t>& lengths) {
  Tensor m = Tensor::zeros(Shape{static_cast<int64_t>(lengths.size()), steps});
  for (size_t b = 0; b < lengths.size(); ++b)
    for (int64_t t = 0; t < lengths[b]; ++t) m.data()[b * steps + t] = 1.0f;
  return m;
}

TransformerLayerOptions small_options(const std::string& norm, const std::string& position, int64_t model_size = 8,
                                      int64_t heads = 2, int64_t ffn = 16) {
  TransformerLayerOptions o;
  o.model_size = model_size;
  o.heads = heads;
  o.ffn_size = ffn;
  o.norm.kind = parse_norm_kind(norm);
  o.norm.p = 0.5f;
  o.norm_position = parse_norm_position(position);
  o.dropout = 0.0f;
  return o;
}

Tensor rows_of(const Tensor& t, const std::vector<int32_t>& rows) {
  NoGradGuard no_grad;
  return index_select(constant(t), 0, rows).value();
}

Tensor position(const Tensor& y, int64_t t) {  // y [B, T, D] → [B, 1, D] at t
  NoGradGuard no_grad;
  return slice(constant(y), 1, t, t + 1).value();
}

}  // namespace

TEST_CASE("Transformer encoder layer against torch.nn.TransformerEncoderLayer (post/pre; layernorm, rmsnorm, "
          "prmsnorm; key padding)") {
  nlohmann::json ref = test::load_reference("transformer.json");
  REQUIRE(ref["encoder"].size() == 6);
  for (const auto& c : ref["encoder"]) {
    const std::string name = c["name"];
    INFO(name);
    Generator init_gen(0), noise_gen(1);
    TransformerEncoderLayer layer(options_of(ref, c), init_gen, noise_gen);
    load_params(layer, c);
    Var x = input(c, "x");
    Var y = layer.forward(x, mask(c, "key_mask"));
    check_against_reference(c, y, {{"x", x}}, layer);
  }
}

TEST_CASE("Transformer decoder layer against torch.nn.TransformerDecoderLayer (post/pre; layernorm, rmsnorm, "
          "prmsnorm; causal, target and memory padding)") {
  nlohmann::json ref = test::load_reference("transformer.json");
  REQUIRE(ref["decoder"].size() == 6);
  for (const auto& c : ref["decoder"]) {
    const std::string name = c["name"];
    INFO(name);
    Generator init_gen(0), noise_gen(1);
    TransformerDecoderLayer layer(options_of(ref, c), init_gen, noise_gen);
    load_params(layer, c);
    Var x = input(c, "x"), memory = input(c, "memory");
    Var y = layer.forward(x, memory, mask(c, "target_mask"), mask(c, "memory_mask"));
    check_against_reference(c, y, {{"x", x}, {"memory", memory}}, layer);
  }
}

TEST_CASE("Transformer layers: parameter names (torch's, with q/k/v_proj and cross_attn)") {
  Generator init_gen(2), noise_gen(3);
  TransformerDecoderLayer decoder(small_options("layernorm", "post"), init_gen, noise_gen);
  auto names = decoder.named_parameters();
  REQUIRE(names.size() == 26);
  CHECK(names[0].first == "self_attn.q_proj.weight");
  for (const char* n : {"self_attn.out_proj.bias", "cross_attn.q_proj.weight", "cross_attn.v_proj.bias",
                        "linear1.weight", "linear2.bias", "norm1.gain", "norm2.bias", "norm3.gain"})
    CHECK_MESSAGE(has_name(decoder, n), n);
  TransformerEncoderLayer encoder(small_options("rmsnorm", "pre"), init_gen, noise_gen);
  CHECK(encoder.named_parameters().size() == 14);  // 8 attention, 4 FFN, 2 gains
  CHECK(has_name(encoder, "norm2.gain"));
  CHECK_FALSE(has_name(encoder, "norm2.bias"));
  CHECK_FALSE(has_name(encoder, "cross_attn.q_proj.weight"));
}

TEST_CASE("Transformer decoder: incremental decoding (start, step) equals forward with the causal mask; "
          "select_rows") {
  for (const char* norm : {"layernorm", "rmsnorm"})
    for (const char* at : {"post", "pre"}) {
      INFO(norm << " " << at);
      Generator init_gen(4), noise_gen(5), gen(6);
      TransformerDecoderLayer layer(small_options(norm, at), init_gen, noise_gen);
      perturb(layer, gen);
      layer.eval();
      NoGradGuard no_grad;
      const int64_t steps = 4;
      Tensor x = normal(Shape{3, steps, 8}, 0.0f, 1.0f, gen);
      Tensor memory = normal(Shape{3, 5, 8}, 0.0f, 1.0f, gen);
      Tensor memory_mask = length_mask(5, {5, 2, 4});
      Tensor full = layer.forward(constant(x), constant(memory), {}, memory_mask).value();

      // Two steps on the batch, then the cache of rows {2, 0, 0} (a beam
      // search's reordering with a repeat) for the remaining steps.
      const std::vector<int32_t> rows{2, 0, 0};
      Tensor x_rows = rows_of(x, rows);
      Tensor full_rows =
          layer.forward(constant(x_rows), constant(rows_of(memory, rows)), {}, rows_of(memory_mask, rows)).value();
      DecoderLayerCache cache = layer.start(constant(memory), memory_mask);
      CHECK(cache.self.length() == 0);
      for (int64_t t = 0; t < steps; ++t) {
        if (t == 2) {
          cache = cache.select_rows(rows);
          CHECK(cache.self.keys.shape() == Shape{3, 2, 8});
          CHECK(cache.cross.values.shape() == Shape{3, 5, 8});
        }
        const bool reordered = t >= 2;
        Tensor y = layer.step(constant(position(reordered ? x_rows : x, t)), cache).value();
        CHECK(cache.self.length() == t + 1);
        // The same float arithmetic in a different order (the cache holds the
        // prefix only; forward masks the future to exactly 0): a few ulps.
        test::all_close(y, position(reordered ? full_rows : full, t), 1e-6f, 1e-5f,
                        "step " + std::to_string(t));
      }
    }
}

TEST_CASE("Transformer layers: gradient checks with padding (and causal) masks") {
  // Model size 4, 2 heads, FFN 6; pRMSNorm with p = 0.5 normalizes by 2 units.
  for (const char* norm : {"layernorm", "rmsnorm", "prmsnorm"})
    for (const char* at : {"post", "pre"}) {
      INFO(norm << " " << at);
      Generator init_gen(7), noise_gen(8), gen(9);
      TransformerEncoderLayer encoder(small_options(norm, at, 4, 2, 6), init_gen, noise_gen);
      perturb(encoder, gen);
      Tensor key_mask = length_mask(3, {3, 2});
      GradCheckResult r = gradcheck([&](const std::vector<Var>& v) { return encoder.forward(v[0], key_mask); },
                                    {normal(Shape{2, 3, 4}, 0.0f, 1.0f, gen)});
      CHECK_MESSAGE(r.ok, "encoder: " << r.report);
      tape().clear();

      TransformerDecoderLayer decoder(small_options(norm, at, 4, 2, 6), init_gen, noise_gen);
      perturb(decoder, gen);
      Tensor target_mask = length_mask(3, {3, 2}), memory_mask = length_mask(4, {2, 4});
      r = gradcheck(
          [&](const std::vector<Var>& v) { return decoder.forward(v[0], v[1], target_mask, memory_mask); },
          {normal(Shape{2, 3, 4}, 0.0f, 1.0f, gen), normal(Shape{2, 4, 4}, 0.0f, 1.0f, gen)});
      CHECK_MESSAGE(r.ok, "decoder: " << r.report);
      tape().clear();
    }
}

TEST_CASE("Multi-head attention: gradient checks of masked self-attention and of attend over appended "
          "KeyValues") {
  Generator gen(10);
  MultiHeadAttention attention(6, 2, gen);
  perturb(attention, gen);
  Tensor key_mask = length_mask(4, {4, 3});
  // Causal self-attention with key padding: one input is query, key and value.
  GradCheckResult r = gradcheck(
      [&](const std::vector<Var>& v) { return attention.forward(v[0], v[0], v[0], key_mask, true).context; },
      {normal(Shape{2, 4, 6}, 0.0f, 1.0f, gen)});
  CHECK_MESSAGE(r.ok, r.report);
  tape().clear();
  // project() of two pieces, appended along time, then attend() with padding
  // of the second piece: gradients reach both pieces and the query.
  Tensor mask5 = length_mask(5, {5, 3});
  r = gradcheck(
      [&](const std::vector<Var>& v) {
        KeyValues kv = attention.project(v[1], v[1]).append(attention.project(v[2], v[2]));
        return attention.attend(v[0], kv, mask5).context;
      },
      {normal(Shape{2, 3, 6}, 0.0f, 1.0f, gen), normal(Shape{2, 2, 6}, 0.0f, 1.0f, gen),
       normal(Shape{2, 3, 6}, 0.0f, 1.0f, gen)});
  CHECK_MESSAGE(r.ok, r.report);
  tape().clear();

  // attend(project) is forward; select_rows picks rows with repeats.
  NoGradGuard no_grad;
  Var q = constant(normal(Shape{2, 3, 6}, 0.0f, 1.0f, gen)), k = constant(normal(Shape{2, 5, 6}, 0.0f, 1.0f, gen));
  Tensor whole = attention.forward(q, k, k, mask5).context.value();
  KeyValues kv = attention.project(k, k);
  CHECK(kv.length() == 5);
  CHECK(max_abs_diff(attention.attend(q, kv, mask5).context.value(), whole) == 0.0f);
  KeyValues picked = kv.select_rows({1, 1, 0});
  CHECK(picked.keys.shape() == Shape{3, 5, 6});
  for (int64_t t = 0; t < 5; ++t)
    for (int64_t e = 0; e < 6; ++e) {
      CHECK(picked.keys.value().at({0, t, e}) == kv.keys.value().at({1, t, e}));
      CHECK(picked.values.value().at({2, t, e}) == kv.values.value().at({0, t, e}));
    }
}

TEST_CASE("sinusoidal_positions against the formula; bad sizes throw") {
  Tensor pe = sinusoidal_positions(6, 8);
  REQUIRE(pe.shape() == Shape{6, 8});
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 0; i < 4; ++i) {
      const double angle = static_cast<double>(t) / std::pow(10000.0, 2.0 * static_cast<double>(i) / 8.0);
      // float rounding of values in [−1, 1]: ≤ 6e-8.
      CHECK(std::fabs(pe.at({t, 2 * i}) - std::sin(angle)) <= 1e-7);
      CHECK(std::fabs(pe.at({t, 2 * i + 1}) - std::cos(angle)) <= 1e-7);
    }
  // A few by hand: 10000^(2/8) = 10, 10000^(6/8) = 1000.
  CHECK(pe.at({0, 0}) == 0.0f);
  CHECK(pe.at({0, 1}) == 1.0f);
  CHECK(pe.at({1, 0}) == doctest::Approx(std::sin(1.0)));
  CHECK(pe.at({3, 2}) == doctest::Approx(std::sin(0.3)));
  CHECK(pe.at({5, 7}) == doctest::Approx(std::cos(0.005)));
  // Starting at `first`: rows of the longer table.
  Tensor later = sinusoidal_positions(2, 8, 3);
  for (int64_t i = 0; i < 8; ++i) {
    CHECK(later.at({0, i}) == pe.at({3, i}));
    CHECK(later.at({1, i}) == pe.at({4, i}));
  }
  CHECK(sinusoidal_positions(0, 8).shape() == Shape{0, 8});
  CHECK_THROWS_AS(sinusoidal_positions(4, 7), Error);
  CHECK_THROWS_AS(sinusoidal_positions(4, 0), Error);
  CHECK_THROWS_AS(sinusoidal_positions(-1, 8), Error);
  CHECK_THROWS_AS(sinusoidal_positions(4, 8, -1), Error);
}

TEST_CASE("Transformer dropout: training differs from eval, and eval equals the layer without dropout") {
  for (const bool on_attention : {true, false}) {
    INFO((on_attention ? "attention dropout" : "sublayer dropout"));
    TransformerLayerOptions with = small_options("layernorm", "pre");
    if (on_attention) with.attention_dropout = 0.3f;
    else with.dropout = 0.3f;
    Generator init_gen(11), noise_gen(12), gen(13);
    TransformerEncoderLayer encoder(with, init_gen, noise_gen);
    TransformerDecoderLayer decoder(with, init_gen, noise_gen);
    CHECK((encoder.self_attn->dropout != nullptr) == on_attention);
    CHECK((decoder.cross_attn->dropout != nullptr) == on_attention);
    Generator init_plain(14), noise_plain(15);
    TransformerEncoderLayer plain_encoder(small_options("layernorm", "pre"), init_plain, noise_plain);
    TransformerDecoderLayer plain_decoder(small_options("layernorm", "pre"), init_plain, noise_plain);
    CHECK(plain_encoder.self_attn->dropout == nullptr);
    // The same weights in both.
    auto copy = [](Module& from, Module& to) {
      auto src = from.named_parameters(), dst = to.named_parameters();
      REQUIRE(src.size() == dst.size());
      for (size_t i = 0; i < src.size(); ++i) {
        REQUIRE(src[i].first == dst[i].first);
        dst[i].second.value().copy_from(src[i].second.value());
      }
    };
    copy(encoder, plain_encoder);
    copy(decoder, plain_decoder);

    NoGradGuard no_grad;
    Var x = constant(normal(Shape{2, 5, 8}, 0.0f, 1.0f, gen));
    Var memory = constant(normal(Shape{2, 5, 8}, 0.0f, 1.0f, gen));
    Tensor key_mask = length_mask(5, {5, 3});
    encoder.train();
    decoder.train();
    Tensor enc_train = encoder.forward(x, key_mask).value();
    Tensor dec_train = decoder.forward(x, memory, key_mask, key_mask).value();
    encoder.eval();
    decoder.eval();
    plain_encoder.eval();
    plain_decoder.eval();
    Tensor enc_eval = encoder.forward(x, key_mask).value();
    Tensor dec_eval = decoder.forward(x, memory, key_mask, key_mask).value();
    CHECK(max_abs_diff(enc_train, enc_eval) > 1e-2f);
    CHECK(max_abs_diff(dec_train, dec_eval) > 1e-2f);
    // In eval, dropout is the identity: the very same arithmetic.
    CHECK(max_abs_diff(enc_eval, plain_encoder.forward(x, key_mask).value()) == 0.0f);
    CHECK(max_abs_diff(dec_eval, plain_decoder.forward(x, memory, key_mask, key_mask).value()) == 0.0f);
  }
}

TEST_CASE("Transformer: norm positions; bad shapes and options throw rg::Error") {
  CHECK(parse_norm_position("post") == NormPosition::Post);
  CHECK(parse_norm_position("pre") == NormPosition::Pre);
  CHECK(norm_position_name(NormPosition::Pre) == "pre");
  CHECK(norm_position_name(parse_norm_position("post")) == "post");
  CHECK_THROWS_AS(parse_norm_position("middle"), Error);
  CHECK(test::error_of([] { parse_norm_position("middle"); }).find("middle") != std::string::npos);

  Generator init_gen(16), noise_gen(17), gen(18);
  TransformerLayerOptions bad = small_options("layernorm", "post");
  bad.heads = 3;  // 8 is not a multiple of 3
  CHECK_THROWS_AS(TransformerEncoderLayer(bad, init_gen, noise_gen), Error);
  bad = small_options("batchnorm", "post");
  CHECK_THROWS_AS(TransformerDecoderLayer(bad, init_gen, noise_gen), Error);
  bad = small_options("layernorm", "pre");
  bad.dropout = 1.0f;
  CHECK_THROWS_AS(TransformerEncoderLayer(bad, init_gen, noise_gen), Error);

  TransformerEncoderLayer encoder(small_options("layernorm", "post"), init_gen, noise_gen);
  TransformerDecoderLayer decoder(small_options("rmsnorm", "pre"), init_gen, noise_gen);
  NoGradGuard no_grad;
  Var x = constant(normal(Shape{2, 4, 8}, 0.0f, 1.0f, gen)), memory = constant(normal(Shape{2, 5, 8}, 0.0f, 1.0f, gen));
  CHECK_THROWS_AS(encoder.forward(constant(Tensor::zeros(Shape{2, 8}))), Error);        // rank 2
  CHECK_THROWS_AS(encoder.forward(constant(Tensor::zeros(Shape{2, 4, 6}))), Error);     // wrong model size
  CHECK_THROWS_AS(encoder.forward(x, Tensor::ones(Shape{2, 5})), Error);                // mask length
  CHECK_THROWS_AS(encoder.forward(x, length_mask(4, {4, 0})), Error);                   // a row with no key
  CHECK_THROWS_AS(decoder.forward(x, constant(Tensor::zeros(Shape{3, 5, 8}))), Error);  // batch mismatch
  CHECK_THROWS_AS(decoder.forward(x, constant(Tensor::zeros(Shape{2, 5, 6}))), Error);  // memory size
  CHECK_THROWS_AS(decoder.forward(x, memory, Tensor::ones(Shape{2, 5})), Error);        // target mask length
  CHECK_THROWS_AS(decoder.forward(x, memory, {}, Tensor::ones(Shape{2, 4})), Error);    // memory mask length
  CHECK_THROWS_AS(decoder.start(constant(Tensor::zeros(Shape{5, 8}))), Error);
  DecoderLayerCache cache = decoder.start(memory, length_mask(5, {5, 3}));
  CHECK_THROWS_AS(decoder.step(x, cache), Error);                                            // 4 positions at once
  CHECK_THROWS_AS(decoder.step(constant(Tensor::zeros(Shape{3, 1, 8})), cache), Error);      // batch mismatch
  CHECK(decoder.step(constant(Tensor::zeros(Shape{2, 1, 8})), cache).shape() == Shape{2, 1, 8});
}
