// Optimizers and learning-rate schedules (clipping: test_clip.cpp).
//
// 1. Against torch.optim (tests/reference/optim.json, written by
//    tests/reference/make_optim_refs.py; its docstring gives the
//    format): Adam with two groups, with L2 weight decay, β1 changed to 0.5
//    before step 3 and lr changed mid-run; AdamW; SGD plain, with momentum,
//    with weight decay, Nesterov and dampening — 5 steps each, parameters
//    compared after every step; a parameter ("late") whose first gradient
//    arrives at step 3.
// 2. Hand-computed first steps (Adam ≈ lr·sign(g), without bias correction,
//    AdamW, L2, SGD with momentum), schedules at chosen steps; the warm-up,
//    cosine and one-cycle schedules against torch's LinearLR, CosineAnnealingLR,
//    SequentialLR and OneCycleLR (optim.json's "schedules").
// 3. State: names, lazy allocation, save/restore through named_state(),
//    thread-count independence, and the error messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/optim/clip.h"
#include "rmsgrad/optim/schedule.h"
#include "rmsgrad/optim/sgd.h"
#include "optim_test_util.h"
#include "test_util.h"

using nlohmann::json;
using namespace rg;

namespace {

Tensor T(const json& j) { return test::tensor_from_json(j); }

using test::param;
using test::set_grad;

using test::error_of;

// Tolerance for the torch.optim runs: |got − want| ≤ 1e-6, absolute.
//
// The reference is torch.optim in float64 from the same float32 inputs, so the
// difference is our float32 rounding alone (u = 2^-24 ≈ 6e-8). Parameters start
// in [-1, 1] and stay below 2 in magnitude; one step moves them by |Δ| ≤ 0.25
// (Adam: about lr ≤ 0.05 per step; SGD with momentum 0.9: lr·Σ 0.9^k·|g| ≤ 0.23).
// Per step, writing p rounds once (≤ u·|p| ≤ 1.2e-7 at |p| < 2) and the update
// carries a relative error of about 8u (two roundings each in m and v, √, /,
// + ε, · step size): ≤ 8u·|Δ| ≤ 1.2e-7. Errors already in m, v or b are damped
// by β < 1 and enter Δ with the same relative size. Five steps, all errors of
// one sign: ≤ 5·(1.2e-7 + 1.2e-7) = 1.2e-6 in the extreme, which would need
// the largest p and the largest Δ at once; the realistic worst is ≈ 5e-7 and
// random signs give ≈ √5·1e-7 ≈ 2e-7 (torch's own float32 run lands within
// 1.5e-7, checked by the generator; we measure ≈ 1.2e-7). Formula errors move
// weights by far more (measured by planting each one): ε inside the root or
// before the bias correction by 2e-4 to 3e-3, the global step count in place of
// "late"'s own by 5e-4 to 1e-2, β1 frozen in the bias correction by 2e-2, a
// dampened first momentum step by 9e-3, L2 in place of decoupled decay by 3e-3.
constexpr float kOptimTolerance = 1e-6f;

// The parameters of the reference runs, fresh from "initial".
std::map<std::string, Var> initial_parameters(const json& ref) {
  std::map<std::string, Var> vars;
  for (const auto& [name, t] : ref.at("initial").items()) vars[name] = Var(T(t), true);
  return vars;
}

std::unique_ptr<Optimizer> make_optimizer(const json& c, std::map<std::string, Var>& vars) {
  const std::string kind = c.at("optimizer");
  std::unique_ptr<Optimizer> opt;
  if (kind == "sgd") opt = std::make_unique<Sgd>();
  else opt = std::make_unique<Adam>();
  for (const json& g : c.at("groups")) {
    NamedParameters named;
    for (const std::string n : g.at("params")) named.emplace_back(n, vars.at(n));
    const json& o = g.at("options");
    if (kind == "sgd") {
      static_cast<Sgd&>(*opt).add_group(named, SgdOptions{.lr = o.at("lr"),
                                                         .momentum = o.at("momentum"),
                                                         .dampening = o.at("dampening"),
                                                         .weight_decay = o.at("weight_decay"),
                                                         .nesterov = o.at("nesterov")});
    } else {
      static_cast<Adam&>(*opt).add_group(
          named, AdamOptions{.lr = o.at("lr"),
                             .beta1 = o.at("beta1"),
                             .beta2 = o.at("beta2"),
                             .eps = o.at("eps"),
                             .weight_decay = o.at("weight_decay"),
                             .decay = kind == "adamw" ? WeightDecay::Decoupled : WeightDecay::L2});
    }
  }
  return opt;
}

}  // namespace

TEST_CASE("optimizers reproduce torch.optim step by step") {
  const json ref = test::load_reference("optim.json");
  const json& grads = ref.at("grads");
  REQUIRE(ref.at("cases").size() == 7);
  float worst = 0.0f;
  for (const json& c : ref.at("cases")) {
    const std::string name = c.at("name");
    CAPTURE(name);
    auto vars = initial_parameters(ref);
    auto opt = make_optimizer(c, vars);
    for (size_t step = 1; step <= grads.size(); ++step) {
      for (const json& change : c.at("changes")) {
        if (change.at("before_step") != step) continue;
        if (change.contains("beta1")) dynamic_cast<Adam&>(*opt).set_beta1(change.at("beta1").get<double>());
        if (change.contains("lr")) opt->set_lr(change.at("lr").get<double>());
      }
      for (auto& [n, v] : vars) {
        if (grads[step - 1].contains(n)) v.grad().copy_from(T(grads[step - 1].at(n)));
        else CHECK(!v.has_grad());  // only "late", before its first gradient
      }
      opt->step();
      for (const auto& [n, want] : c.at("after")[step - 1].items()) {
        test::all_close(vars.at(n).value(), T(want), kOptimTolerance, 0.0f,
                        name + " step " + std::to_string(step) + " " + n);
        worst = std::max(worst, max_abs_diff(vars.at(n).value(), T(want)));
      }
    }
    CHECK(opt->step_count() == 5);
  }
  MESSAGE("largest difference from torch.optim (float64): " << worst);
}

TEST_CASE("Adam's first steps, computed by hand") {
  SUBCASE("with bias correction each weight moves by lr·g/(|g| + ε) ≈ lr·sign(g)") {
    // m̂ = g and v̂ = g² on the first step; with the same g again, m̂ and v̂ are
    // unchanged (m = 0.19·g over 1 − 0.9² = 0.19), so the second step repeats it.
    Var w = param(Shape{5}, {1.0f, -0.5f, 0.25f, 0.0f, 2.0f});
    Adam adam({{"w", w}}, AdamOptions{.lr = 0.1});
    set_grad(w, {0.5f, -2.0f, 1e-3f, 0.0f, 1e-8f});
    adam.step();
    // 0.25 − 0.1·1e-3/(1e-3 + 1e-8) = 0.1500009999...; 2 − 0.1·1e-8/(2e-8) = 1.95
    const std::vector<float> once = {0.9f, -0.4f, 0.150001f, 0.0f, 1.95f};
    for (int i = 0; i < 5; ++i) CHECK(w.value().data()[i] == doctest::Approx(once[i]).epsilon(1e-6));
    adam.step();
    const std::vector<float> twice = {0.8f, -0.3f, 0.050002f, 0.0f, 1.9f};
    for (int i = 0; i < 5; ++i) CHECK(w.value().data()[i] == doctest::Approx(twice[i]).epsilon(1e-6));
  }
  SUBCASE("without bias correction the first step is lr·0.1·g/(√0.001·|g| + ε) = 3.1623·lr·sign(g)") {
    Var w = param(Shape{2}, {1.0f, 1.0f});
    Adam adam({{"w", w}}, AdamOptions{.lr = 0.01, .bias_correction = false});
    set_grad(w, {0.3f, -4.0f});
    adam.step();
    CHECK(w.value().data()[0] == doctest::Approx(1.0 - 0.01 * 0.1 / std::sqrt(0.001)).epsilon(1e-6));
    CHECK(w.value().data()[1] == doctest::Approx(1.0 + 0.01 * 0.1 / std::sqrt(0.001)).epsilon(1e-6));
  }
  SUBCASE("L2 decay enters the gradient, decoupled decay scales the weight") {
    // g + λ·p = −0.05 + 0.1·1 = +0.05: the weight moves DOWN by lr although g < 0.
    Var a = param(Shape{1}, {1.0f});
    Adam l2({{"a", a}}, AdamOptions{.lr = 0.1, .weight_decay = 0.1});
    set_grad(a, {-0.05f});
    l2.step();
    CHECK(a.value().item() == doctest::Approx(0.9).epsilon(1e-6));
    // AdamW: 1·(1 − 0.1·0.1) + 0.1 = 1.09.
    Var b = param(Shape{1}, {1.0f});
    Adam adamw({{"b", b}}, adamw_options(0.1, 0.1));
    set_grad(b, {-0.05f});
    adamw.step();
    CHECK(b.value().item() == doctest::Approx(1.09).epsilon(1e-6));
  }
}

TEST_CASE("SGD's first steps, computed by hand") {
  Var w = param(Shape{2}, {1.0f, -2.0f});
  Sgd sgd({{"w", w}}, SgdOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.5});
  set_grad(w, {1.0f, 0.0f});
  sgd.step();  // d = g + 0.5·p = (1.5, −1); b = d; p − 0.1·b = (0.85, −1.9)
  CHECK(w.value().data()[0] == doctest::Approx(0.85).epsilon(1e-6));
  CHECK(w.value().data()[1] == doctest::Approx(-1.9).epsilon(1e-6));
  set_grad(w, {0.0f, 0.0f});
  sgd.step();  // d = 0.5·p = (0.425, −0.95); b = 0.9·(1.5, −1) + d = (1.775, −1.85)
  CHECK(w.value().data()[0] == doctest::Approx(0.85 - 0.1775).epsilon(1e-6));
  CHECK(w.value().data()[1] == doctest::Approx(-1.9 + 0.185).epsilon(1e-6));
}

TEST_CASE("schedules at chosen steps") {
  ConstantSchedule constant(0.3);
  CHECK(constant.lr(0) == 0.3);
  CHECK(constant.lr(1000000) == 0.3);

  LinearDecaySchedule cifar(1e-3, 100, 200);  // constant for the first half, then to 0
  CHECK(cifar.lr(0) == 1e-3);
  CHECK(cifar.lr(100) == 1e-3);
  CHECK(cifar.lr(150) == doctest::Approx(5e-4));
  CHECK(cifar.lr(175) == doctest::Approx(2.5e-4));
  CHECK(cifar.lr(200) == 0.0);
  CHECK(cifar.lr(250) == 0.0);
  LinearDecaySchedule to_floor(1.0, 0, 10, 0.1);
  CHECK(to_floor.lr(5) == doctest::Approx(0.55));
  CHECK(to_floor.lr(11) == doctest::Approx(0.1));

  InverseSqrtSchedule inverse_sqrt(2.0, 4);  // 2·min(s/4, √(4/s))
  CHECK(inverse_sqrt.lr(0) == 0.0);
  CHECK(inverse_sqrt.lr(1) == doctest::Approx(0.5));
  CHECK(inverse_sqrt.lr(2) == doctest::Approx(1.0));
  CHECK(inverse_sqrt.lr(4) == doctest::Approx(2.0));
  CHECK(inverse_sqrt.lr(16) == doctest::Approx(1.0));
  CHECK(inverse_sqrt.lr(64) == doctest::Approx(0.5));
  CHECK(inverse_sqrt.str().find("min(step/4") != std::string::npos);

  // Driving an optimizer: the lr of update k is schedule.lr(k).
  Var w = param(Shape{1}, {0.0f});
  Sgd sgd({{"w", w}}, SgdOptions{.lr = 1.0});
  LinearDecaySchedule halves(1.0, 1, 3);  // updates 1, 2, 3: lr 1, 0.5, 0
  for (int k = 0; k < 3; ++k) {
    sgd.set_lr(halves.lr(sgd.step_count() + 1));
    set_grad(w, {-1.0f});
    sgd.step();
  }
  CHECK(w.value().item() == doctest::Approx(1.5));
  CHECK(sgd.lr() == 0.0);
}

TEST_CASE("warm-up, cosine and one-cycle schedules reproduce torch's schedulers") {
  // Both sides compute in double; the reference is written with 10
  // significant digits (≤ 5e-10 relative), which is all a correct schedule can
  // differ by. A wrong formula or an off-by-one step shifts values by 1e-3
  // relative or more (one step of a 10- to 100-step curve).
  const json ref = test::load_reference("optim.json");
  int checked = 0;
  for (const json& c : ref.at("schedules")) {
    const std::string name = c.at("name"), kind = c.at("kind");
    CAPTURE(name);
    const json& a = c.at("args");
    std::unique_ptr<LearningRateSchedule> schedule;
    if (kind == "warmup") {
      schedule = std::make_unique<WarmupSchedule>(a.at("base"), a.at("warmup"));
    } else if (kind == "cosine") {
      schedule = std::make_unique<CosineSchedule>(a.at("base"), a.at("total_steps"), a.at("min_lr"), a.at("warmup"));
    } else {
      schedule = std::make_unique<OneCycleSchedule>(a.at("max_lr"), a.at("total_steps"), a.at("pct_start"),
                                                    a.at("div_factor"), a.at("final_div_factor"));
    }
    const auto steps = c.at("steps").get<std::vector<int64_t>>();
    const auto lrs = c.at("lr").get<std::vector<double>>();
    REQUIRE(steps.size() == lrs.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      CAPTURE(steps[i]);
      CHECK(std::fabs(schedule->lr(steps[i]) - lrs[i]) <= 1e-9 * std::fabs(lrs[i]) + 1e-15);
    }
    ++checked;
  }
  CHECK(checked == 7);
}

TEST_CASE("warm-up, cosine and one-cycle schedules at chosen steps, before the first and after the last") {
  WarmupSchedule warmup(0.1, 4);  // 0.1·min(s, 4)/4
  CHECK(warmup.lr(0) == 0.0);
  CHECK(warmup.lr(1) == doctest::Approx(0.025));
  CHECK(warmup.lr(4) == doctest::Approx(0.1));
  CHECK(warmup.lr(1000) == doctest::Approx(0.1));

  CosineSchedule cosine(1.0, 10, 0.1, 2);  // up to 1 at step 2, then down to 0.1 at step 10
  CHECK(cosine.lr(0) == 0.0);
  CHECK(cosine.lr(1) == doctest::Approx(0.5));
  CHECK(cosine.lr(2) == doctest::Approx(1.0));
  CHECK(cosine.lr(6) == doctest::Approx(0.55));  // halfway down: (1 + 0.1)/2
  CHECK(cosine.lr(10) == doctest::Approx(0.1));
  CHECK(cosine.lr(11) == 0.1);  // torch's cosine would rise again; ours stays
  CHECK(cosine.lr(1000) == 0.1);
  CosineSchedule plain(2.0, 4);  // no warm-up: lr(0) = base, to 0 at step 4
  CHECK(plain.lr(0) == 2.0);
  CHECK(plain.lr(2) == doctest::Approx(1.0));
  CHECK(plain.lr(4) == 0.0);

  // max 1, initial 1/25 = 0.04, min 0.04/1e4 = 4e-6; the peak at e = 0.3·10 − 1 = 2, step 3.
  OneCycleSchedule cycle(1.0, 10);
  CHECK(cycle.lr(0) == doctest::Approx(0.04));
  CHECK(cycle.lr(1) == doctest::Approx(0.04));
  CHECK(cycle.lr(2) == doctest::Approx(0.52));  // halfway up
  CHECK(cycle.lr(3) == doctest::Approx(1.0));
  CHECK(cycle.lr(10) == doctest::Approx(4e-6));
  CHECK(cycle.lr(11) == doctest::Approx(4e-6));  // torch raises past total_steps; ours stays

  for (const LearningRateSchedule* s : std::initializer_list<const LearningRateSchedule*>{&warmup, &cosine, &cycle})
    CHECK(!s->str().empty());
}

TEST_CASE("groups carry their own learning rates and betas") {
  Var a = param(Shape{1}, {0.0f}), b = param(Shape{1}, {0.0f});
  Adam adam;
  adam.add_group({{"a", a}}, AdamOptions{.lr = 0.1});
  adam.add_group({{"b", b}}, AdamOptions{.lr = 0.01, .beta1 = 0.8});
  CHECK(adam.group_count() == 2);
  CHECK(adam.lr(1) == 0.01);
  adam.set_lr(1, 0.02);
  adam.set_beta1(0, 0.5);
  CHECK(adam.lr(0) == 0.1);
  CHECK(adam.lr(1) == 0.02);
  CHECK(adam.options(0).beta1 == 0.5);
  CHECK(adam.options(1).beta1 == 0.8);
  adam.set_beta1(0.6);
  CHECK(adam.options(1).beta1 == 0.6);
  set_grad(a, {1.0f});
  set_grad(b, {1.0f});
  adam.step();
  CHECK(a.value().item() == doctest::Approx(-0.1).epsilon(1e-6));
  CHECK(b.value().item() == doctest::Approx(-0.02).epsilon(1e-6));
  CHECK(adam.named_parameters().size() == 2);
  CHECK(adam.group_parameters(1)[0].first == "b");
  adam.zero_grad();
  CHECK(a.grad().item() == 0.0f);
  CHECK(b.grad().item() == 0.0f);
}

TEST_CASE("named_state: stable names, lazy allocation, exact save and restore") {
  auto make_params = [] {
    return NamedParameters{{"enc.weight", param(Shape{2, 2}, {0.5f, -0.5f, 1.0f, 0.0f})},
                           {"enc.bias", param(Shape{2}, {0.1f, 0.2f})},
                           {"unused", param(Shape{1}, {7.0f})}};
  };
  auto feed = [](NamedParameters& named, int step) {  // "unused" never gets a gradient
    for (int i = 0; i < 2; ++i) {
      Tensor& g = named[i].second.grad();
      for (int64_t j = 0; j < g.numel(); ++j) g.data()[j] = std::sin(1.7f * step + 0.9f * j + i);
    }
  };
  NamedParameters a = make_params();
  Adam adam(a, AdamOptions{.lr = 0.05});
  for (int step = 1; step <= 2; ++step) {
    feed(a, step);
    adam.step();
  }
  // The parameter without a gradient is untouched and has no update yet.
  CHECK(a[2].second.value().item() == 7.0f);

  const NamedTensors state = adam.named_state();
  std::vector<std::string> names;
  for (const auto& [n, t] : state) names.push_back(n);
  CHECK(names == std::vector<std::string>{"adam.step", "adam.step.enc.weight", "adam.m.enc.weight",
                                          "adam.v.enc.weight", "adam.step.enc.bias", "adam.m.enc.bias",
                                          "adam.v.enc.bias", "adam.step.unused", "adam.m.unused", "adam.v.unused"});
  CHECK(state[0].second.item() == 2.0f);
  CHECK(state[1].second.item() == 2.0f);
  CHECK(state[7].second.item() == 0.0f);  // allocated by named_state, as zeros
  CHECK(state[2].second.shape() == Shape{2, 2});

  // Restore into a fresh optimizer over copies of the parameters; both runs
  // then continue identically, to the bit.
  NamedParameters b = make_params();
  for (size_t i = 0; i < b.size(); ++i) b[i].second.value().copy_from(a[i].second.value());
  Adam resumed(b, AdamOptions{.lr = 0.05});
  const NamedTensors target = resumed.named_state();
  REQUIRE(target.size() == state.size());
  for (size_t i = 0; i < state.size(); ++i) {
    CHECK(target[i].first == state[i].first);
    Tensor t = target[i].second;  // aliases the optimizer's state
    t.copy_from(state[i].second);
  }
  CHECK(resumed.step_count() == 2);
  for (int step = 3; step <= 5; ++step) {
    feed(a, step);
    feed(b, step);
    adam.step();
    resumed.step();
  }
  for (size_t i = 0; i < a.size(); ++i) CHECK(max_abs_diff(a[i].second.value(), b[i].second.value()) == 0.0f);

  // A damaged counter is refused when read.
  resumed.named_state()[0].second.fill(2.5f);
  CHECK_THROWS_WITH_AS(resumed.step(), doctest::Contains("adam: the step counter holds 2.5"), Error);

  // SGD without momentum keeps no buffer, only the counters.
  NamedParameters c = make_params();
  Sgd sgd(c);
  CHECK(sgd.named_state().size() == 4);
  Sgd heavy(make_params(), SgdOptions{.momentum = 0.9});
  CHECK(heavy.named_state()[2].first == "sgd.momentum.enc.weight");
}

TEST_CASE("updates do not depend on the thread count") {
  const int threads_before = num_threads();
  const int64_t n = 300000;  // well above the parallel grain
  auto run = [&](int threads) {
    set_num_threads(threads);
    Tensor init = Tensor::empty(Shape{n});
    for (int64_t i = 0; i < n; ++i) init.data()[i] = std::cos(0.001f * i);
    Var w(init, true), v(init.clone(), true);
    Adam adam({{"w", w}}, AdamOptions{.lr = 0.01, .weight_decay = 0.1});
    Sgd sgd({{"v", v}}, SgdOptions{.lr = 0.01, .momentum = 0.9, .nesterov = true});
    double norm = 0.0;
    for (int step = 0; step < 3; ++step) {
      for (Var* p : {&w, &v})
        for (int64_t i = 0; i < n; ++i) p->grad().data()[i] = std::sin(0.37f * i + step);
      norm = clip_grad_norm({{"w", w}, {"v", v}}, 10.0);
      adam.step();
      sgd.step();
    }
    return std::tuple{w.value(), v.value(), norm};
  };
  const auto [w1, v1, norm1] = run(1);
  const auto [w2, v2, norm2] = run(2);
  set_num_threads(threads_before);
  CHECK(max_abs_diff(w1, w2) == 0.0f);
  CHECK(max_abs_diff(v1, v2) == 0.0f);
  CHECK(norm1 == doctest::Approx(norm2).epsilon(1e-12));  // double partial sums in another order
}

TEST_CASE("errors name the optimizer, the group and the problem") {
  Var a = param(Shape{1}, {0.0f}), b = param(Shape{1}, {0.0f});
  CHECK(error_of([&] { Adam({{"a", a}, {"a", b}}); }) == "adam: duplicate parameter name 'a' in group 0");
  CHECK(error_of([&] {
          Adam adam({{"a", a}});
          adam.add_group({{"a", b}}, {});
        }) == "adam: duplicate parameter name 'a': already in group 0, again in group 1");
  CHECK(error_of([&] { Sgd({{"a", a}, {"alias", a}}); }) ==
        "sgd: parameter 'alias' (group 0) is the same Var as 'a' (group 0); each Var may be registered once");
  CHECK(error_of([&] { Adam({{"c", Var(Tensor::zeros(Shape{1}))}}); }) ==
        "adam: parameter 'c' does not require a gradient (a constant?)");
  CHECK(error_of([&] { Adam(NamedParameters{}); }) == "adam: group 0 has no parameters");
  CHECK(error_of([&] { Adam({{"", a}}); }) == "adam: group 0 has a parameter with an empty name");
  CHECK(error_of([&] { Adam({{"a", a}}, AdamOptions{.lr = -0.1}); }) ==
        "adam: group 0: lr must be finite and >= 0, got -0.1");
  CHECK(error_of([&] { Adam({{"a", a}}, AdamOptions{.beta2 = 1.0}); }) ==
        "adam: group 0: beta2 must be in [0, 1), got 1");
  CHECK(error_of([&] { Adam({{"a", a}}, AdamOptions{.eps = -1e-8}); }) ==
        "adam: group 0: eps must be finite and >= 0, got -1e-08");
  CHECK(error_of([&] { Sgd({{"a", a}}, SgdOptions{.weight_decay = -1}); }) ==
        "sgd: group 0: weight_decay must be finite and >= 0, got -1");
  CHECK(error_of([&] { Sgd({{"a", a}}, SgdOptions{.momentum = 0.9, .dampening = 0.1, .nesterov = true}); }) ==
        "sgd: group 0: nesterov needs momentum > 0 and dampening 0, got momentum 0.9 and dampening 0.1");
  Adam adam({{"a", a}});
  adam.add_group({{"b", b}}, {});
  CHECK(error_of([&] { adam.set_lr(1, -1.0); }) == "adam: group 1: lr must be finite and >= 0, got -1");
  CHECK(error_of([&] { adam.set_lr(NAN); }) == "adam: group 0: lr must be finite and >= 0, got nan");
  CHECK(error_of([&] { adam.set_beta1(1, 1.5); }) == "adam: group 1: beta1 must be in [0, 1), got 1.5");
  CHECK(error_of([&] { adam.lr(2); }) == "adam: lr: no group 2 (the optimizer has 2)");
  CHECK(adam.lr(1) == 1e-3);  // unchanged by the failed calls
  CHECK(error_of([&] { clip_grad_norm({{"a", a}}, 0.0); }) == "clip_grad_norm: max_norm must be finite and > 0, got 0");
  CHECK(error_of([&] { clip_grad_norm_per_parameter({{"a", a}}, -1.0); }) ==
        "clip_grad_norm_per_parameter: max_norm must be finite and > 0, got -1");
  CHECK(error_of([] { LinearDecaySchedule(1.0, 10, 10); }) ==
        "LinearDecaySchedule: need 0 <= start < end, got start 10 and end 10");
  CHECK(error_of([] { InverseSqrtSchedule(1.0, 0); }) == "InverseSqrtSchedule: warmup must be >= 1 step, got 0");
  CHECK(error_of([] { ConstantSchedule(-1.0); }) == "ConstantSchedule: base must be finite and >= 0, got -1");
  CHECK(error_of([] { InverseSqrtSchedule(1.0, 10).lr(-1); }) == "InverseSqrtSchedule: step must be >= 0, got -1");
  CHECK(error_of([] { WarmupSchedule(1.0, 0); }) == "WarmupSchedule: warmup must be >= 1 step, got 0");
  CHECK(error_of([] { CosineSchedule(1.0, 10, 0.0, 10); }) ==
        "CosineSchedule: need 0 <= warmup < total_steps, got warmup 10 and total_steps 10");
  CHECK(error_of([] { CosineSchedule(1.0, 10, -0.1); }) == "CosineSchedule: min_lr must be finite and >= 0, got -0.1");
  CHECK(error_of([] { CosineSchedule(1.0, 10).lr(-1); }) == "CosineSchedule: step must be >= 0, got -1");
  CHECK(error_of([] { OneCycleSchedule(1.0, 3); }) ==
        "OneCycleSchedule: need 0 < pct_start < 1 and pct_start·total_steps > 1, got pct_start 0.3 and total_steps 3");
  CHECK(error_of([] { OneCycleSchedule(1.0, 100, 1.0); }) ==
        "OneCycleSchedule: need 0 < pct_start < 1 and pct_start·total_steps > 1, got pct_start 1 and total_steps 100");
  CHECK(error_of([] { OneCycleSchedule(1.0, 100, 0.3, 0.0); }) ==
        "OneCycleSchedule: div_factor and final_div_factor must be finite and > 0, got 0 and 10000");
}
