// Gradient clipping: against torch.nn.utils.clip_grad_norm_ (globally and
// per parameter, tests/reference/optim.json), by hand, and global_clip with
// Optimizer::step(scale) against clip_grad_norm followed by step();
// clip_grad_value against torch.nn.utils.clip_grad_value_ and on non-finite
// gradients.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/optim/clip.h"
#include "rmsgrad/optim/sgd.h"
#include "optim_test_util.h"
#include "test_util.h"

using nlohmann::json;
using namespace rg;

namespace {

Tensor T(const json& j) { return test::tensor_from_json(j); }

using test::param;
using test::set_grad;

}  // namespace

TEST_CASE("gradient clipping reproduces torch.nn.utils.clip_grad_norm_") {
  const json ref = test::load_reference("optim.json");
  for (const json& c : ref.at("clip")) {
    const std::string name = c.at("name");
    CAPTURE(name);
    NamedParameters named;
    for (const auto& [n, g] : c.at("grads").items()) {
      Var v(Tensor::zeros(T(g).shape()), true);
      v.grad().copy_from(T(g));
      named.emplace_back(n, v);
    }
    named.emplace_back("late", Var(Tensor::zeros(Shape{2, 3}), true));  // no gradient: skipped
    const double max_norm = c.at("max_norm");
    // Norms: sums of ≤ 12 squares of float32 values, in double on both sides.
    if (c.at("kind") == "global") {
      const double norm = clip_grad_norm(named, max_norm);
      CHECK(norm == doctest::Approx(c.at("norm").get<double>()).epsilon(1e-12));
    } else {
      const auto norms = clip_grad_norm_per_parameter(named, max_norm);
      REQUIRE(norms.size() == 3);
      for (const auto& [n, norm] : norms)
        CHECK(norm == doctest::Approx(c.at("norms").at(n).get<double>()).epsilon(1e-12));
    }
    CHECK(!named.back().second.has_grad());
    // Clipped gradients: g·float(c), two float32 roundings (≤ 2u ≈ 1.2e-7
    // relative) against a float64 reference; 2.5e-7 relative allows for both.
    for (const auto& [n, want] : c.at("clipped").items()) {
      Var v;
      for (auto& [m, var] : named)
        if (m == n) v = var;
      test::all_close(v.grad(), T(want), 0.0f, 2.5e-7f, name + " " + n);
    }
  }
}

TEST_CASE("clipping by global norm and per parameter, by hand") {
  auto make = [] {
    NamedParameters named = {{"a", param(Shape{2}, {0, 0})}, {"b", param(Shape{2}, {0, 0})},
                             {"c", param(Shape{2}, {0, 0})}};
    set_grad(named[0].second, {3.0f, 4.0f});  // norm 5
    set_grad(named[1].second, {0.3f, 0.4f});  // norm 0.5; c has no gradient
    return named;
  };
  SUBCASE("per parameter: only the gradient above max_norm shrinks, to max_norm") {
    NamedParameters named = make();
    const auto norms = clip_grad_norm_per_parameter(named, 1.0);
    REQUIRE(norms.size() == 2);
    CHECK(norms[0].first == "a");
    CHECK(norms[0].second == doctest::Approx(5.0));
    CHECK(norms[1].second == doctest::Approx(0.5));
    CHECK(named[0].second.grad().data()[0] == doctest::Approx(0.6).epsilon(1e-6));
    CHECK(named[0].second.grad().data()[1] == doctest::Approx(0.8).epsilon(1e-6));
    CHECK(named[1].second.grad().to_vector() == std::vector<float>{0.3f, 0.4f});  // untouched
    CHECK(!named[2].second.has_grad());
  }
  SUBCASE("global: every gradient shrinks by max_norm/(N + 1e-6)") {
    NamedParameters named = make();
    const double n = std::sqrt(25.25);
    CHECK(clip_grad_norm(named, 1.0) == doctest::Approx(n));
    CHECK(grad_norm(named) == doctest::Approx(1.0).epsilon(1e-6));
    CHECK(named[1].second.grad().data()[1] == doctest::Approx(0.4 / (n + 1e-6)).epsilon(1e-6));
    CHECK(!named[2].second.has_grad());
  }
  SUBCASE("a non-finite norm is returned and the gradients are left alone") {
    NamedParameters named = make();
    named[1].second.grad().data()[0] = INFINITY;
    CHECK(std::isinf(clip_grad_norm(named, 1.0)));
    CHECK(named[0].second.grad().to_vector() == std::vector<float>{3.0f, 4.0f});
  }
}

TEST_CASE("global_clip + step(scale): the parameters of clip_grad_norm + step(), bit for bit") {
  const int64_t n = 5000;
  // Three steps of each optimizer without L2 decay (with it the fused update
  // may round g·c + λp once where the two passes round twice); the gradients
  // are large enough that every step clips.
  auto run = [&](bool fused, auto make_optimizer) {
    Tensor init = Tensor::empty(Shape{n});
    for (int64_t i = 0; i < n; ++i) init.data()[i] = std::cos(0.001f * i);
    Var w(init, true);
    auto optimizer = make_optimizer(w);
    std::vector<float> scales;
    for (int step = 0; step < 3; ++step) {
      for (int64_t i = 0; i < n; ++i) w.grad().data()[i] = 3.0f * std::sin(0.37f * i + step);
      if (fused) {
        const GlobalClip clip = global_clip({{"w", w}}, 10.0);
        scales.push_back(clip.scale);
        optimizer->step(clip.scale);
      } else {
        clip_grad_norm({{"w", w}}, 10.0);
        optimizer->step();
      }
    }
    return std::pair{w.value().clone(), scales};
  };
  auto adam = [](Var& w) { return std::make_unique<Adam>(NamedParameters{{"w", w}}, AdamOptions{.lr = 0.01}); };
  auto adamw = [](Var& w) {
    return std::make_unique<Adam>(NamedParameters{{"w", w}},
                                  AdamOptions{.lr = 0.01, .weight_decay = 0.1, .decay = WeightDecay::Decoupled});
  };
  auto sgd = [](Var& w) { return std::make_unique<Sgd>(NamedParameters{{"w", w}}, SgdOptions{.lr = 0.01}); };
  auto momentum = [](Var& w) {
    return std::make_unique<Sgd>(NamedParameters{{"w", w}}, SgdOptions{.lr = 0.01, .momentum = 0.9, .nesterov = true});
  };
  const auto check_same = [&](auto make_optimizer) {
    const auto [fused, scales] = run(true, make_optimizer);
    const auto [two_passes, unused] = run(false, make_optimizer);
    for (float s : scales) CHECK(s < 1.0f);  // every step clipped
    CHECK(max_abs_diff(fused, two_passes) == 0.0f);
  };
  check_same(adam);
  check_same(adamw);
  check_same(sgd);
  check_same(momentum);
}

TEST_CASE("global_clip: the factor is 1 below max_norm and for a non-finite norm; gradients untouched") {
  NamedParameters named = {{"a", param(Shape{2}, {0, 0})}};
  set_grad(named[0].second, {3.0f, 4.0f});  // norm 5
  GlobalClip clip = global_clip(named, 10.0);
  CHECK(clip.norm == doctest::Approx(5.0));
  CHECK(clip.scale == 1.0f);
  clip = global_clip(named, 1.0);
  CHECK(clip.scale == static_cast<float>(1.0 / (5.0 + 1e-6)));
  CHECK(named[0].second.grad().to_vector() == std::vector<float>{3.0f, 4.0f});
  named[0].second.grad().data()[0] = NAN;
  clip = global_clip(named, 1.0);
  CHECK(std::isnan(clip.norm));
  CHECK(clip.scale == 1.0f);
  Adam adam(named, AdamOptions{});
  CHECK_THROWS_WITH_AS(adam.step(0.0f), "adam: step: gradient_scale must be finite and > 0, got 0", Error);
}

TEST_CASE("clip_grad_value reproduces torch.nn.utils.clip_grad_value_") {
  const json ref = test::load_reference("optim.json");
  REQUIRE(ref.at("clip_value").size() == 2);
  for (const json& c : ref.at("clip_value")) {
    const std::string name = c.at("name");
    CAPTURE(name);
    NamedParameters named;
    for (const auto& [n, g] : c.at("grads").items()) {
      Var v(Tensor::zeros(T(g).shape()), true);
      v.grad().copy_from(T(g));
      named.emplace_back(n, v);
    }
    named.emplace_back("late", Var(Tensor::zeros(Shape{2, 3}), true));  // no gradient: skipped
    clip_grad_value(named, c.at("clip_value").get<double>());
    CHECK(!named.back().second.has_grad());
    // A value inside the bounds is the float32 input itself; a clamped one is
    // float(clip_value), one rounding (≤ u = 6e-8 relative) from torch's
    // float64 bound. 1.2e-7 relative allows that and the reference's 10 digits.
    for (const auto& [n, want] : c.at("clipped").items()) {
      Var v;
      for (auto& [m, var] : named)
        if (m == n) v = var;
      test::all_close(v.grad(), T(want), 0.0f, 1.2e-7f, name + " " + n);
    }
  }
}

TEST_CASE("clip_grad_value: ±inf clamped, NaN kept, as torch's clamp; the bound must be positive") {
  NamedParameters named = {{"a", param(Shape{5}, {0, 0, 0, 0, 0})}, {"b", param(Shape{1}, {0})}};
  set_grad(named[0].second, {INFINITY, -INFINITY, NAN, -3.0f, 0.25f});
  clip_grad_value(named, 0.5);
  const std::vector<float> g = named[0].second.grad().to_vector();
  CHECK(g[0] == 0.5f);
  CHECK(g[1] == -0.5f);
  CHECK(std::isnan(g[2]));
  CHECK(g[3] == -0.5f);
  CHECK(g[4] == 0.25f);
  CHECK(!named[1].second.has_grad());
  CHECK(first_nonfinite_gradient(named) == "a (NaN)");
  CHECK_THROWS_WITH_AS(clip_grad_value(named, 0.0), "clip_grad_value: clip_value must be finite and > 0, got 0",
                       Error);
  CHECK_THROWS_WITH_AS(clip_grad_value(named, INFINITY),
                       "clip_grad_value: clip_value must be finite and > 0, got inf", Error);
}
