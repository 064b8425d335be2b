// The shared training loop (train/trainer.h), driven the
// way a user drives it: a model of their own, their own batches, loss and
// validation. Checks what the loop promises: when it logs and validates, the
// best checkpoint, --stop-after and a bit-exact resume, a NaN loss stopped
// with the step named, and clear errors for a loop that is not set up.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"
#include "rmsgrad/layers/save_load.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/optim/sgd.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

// A user's own model: a two-layer classifier of points in the plane by the
// quadrant they lie in (four classes); made wider on more input features,
// its products are large enough for oneDNN.
class QuadrantNet : public Module {
 public:
  explicit QuadrantNet(Generator& gen, int64_t inputs = 2, int64_t width = 16) {
    register_module("hidden", hidden, std::make_shared<Linear>(inputs, width, gen));
    register_module("out", out, std::make_shared<Linear>(width, 4, gen));
  }
  Var forward(const Var& x) { return (*out)(tanh((*hidden)(x))); }
  Var operator()(const Var& x) { return forward(x); }
  std::shared_ptr<Linear> hidden, out;
};

struct Points {
  Tensor x;               // [N, 2]
  std::vector<int32_t> labels;
};

Points quadrant_points(int64_t n, uint64_t seed) {
  Generator gen(seed);
  Points p{Tensor::empty(Shape{n, 2}), {}};
  for (int64_t i = 0; i < n; ++i) {
    const float a = gen.uniform(-1, 1), b = gen.uniform(-1, 1);
    p.x.data()[2 * i] = a;
    p.x.data()[2 * i + 1] = b;
    p.labels.push_back((a > 0 ? 1 : 0) + (b > 0 ? 2 : 0));
  }
  return p;
}

Points rows(const Points& all, const Batch& batch) {
  Points p{Tensor::empty(Shape{static_cast<int64_t>(batch.size()), 2}), {}};
  for (size_t i = 0; i < batch.size(); ++i) {
    std::copy_n(all.x.data() + 2 * batch[i], 2, p.x.data() + 2 * i);
    p.labels.push_back(all.labels[static_cast<size_t>(batch[i])]);
  }
  return p;
}

// One training run of QuadrantNet in `dir`, with the loop a driver writes;
// `steps` and `options` as a driver's flags would set them. Returns the steps
// taken.
struct QuadrantRun {
  RunOptions run_options;
  TrainingOptions options{.steps = 40, .eval_every = 10, .best_metric = "accuracy"};
  std::function<double(int64_t step)> score_at;  // the validation score; default: accuracy
  bool poison_at_step_7 = false;                  // make step 7's loss NaN
  bool poison_gradient_at_step_7 = false;         // a finite loss whose gradient in out.weight is NaN
  bool always_nan = false;                         // every loss NaN
  int64_t overflow_at = 0;                         // the update of this step overflows (lr 1e39)

  int64_t train(const fs::path& dir, bool resume = false) {
    run_options.out = dir.string();
    run_options.resume = resume;
    run_options.threads = 1;
    run_options.log_every = 4;
    CLI::App app{"quadrants"};
    add_run_options(app, run_options);
    Run run(run_options, run_settings(app));
    Points train_set = quadrant_points(256, 1), valid_set = quadrant_points(64, 2);
    Generator init(7);
    QuadrantNet model(init);
    Adam adam(model.named_parameters(), AdamOptions{.lr = 0.05});
    BatchCursor cursor(shuffled_batches(256, 32), 3);
    auto validation = [&] {
      NoGradGuard no_grad;
      Var logits = model(constant(valid_set.x));
      int64_t right = 0;
      for (size_t i = 0; i < valid_set.labels.size(); ++i) {
        const float* row = logits.value().data() + 4 * i;
        right += std::max_element(row, row + 4) - row == valid_set.labels[i];
      }
      const double accuracy = 100.0 * static_cast<double>(right) / static_cast<double>(valid_set.labels.size());
      return Evaluation{.loss = cross_entropy(logits, Indices(valid_set.labels)).item(),
                        .fields = {{"accuracy", accuracy}}, .score = accuracy};
    };

    Trainer trainer(run, model, adam, options);
    trainer.keep(cursor);
    trainer.keep("init", init);
    trainer.start();
    auto validate = [&] {
      Evaluation e = validation();
      if (score_at) e.score = score_at(trainer.steps_taken());
      trainer.validate(e);
    };
    if (trainer.due_for_validation()) validate();
    while (trainer.running()) {
      const int64_t step = trainer.next_step();
      adam.set_lr(step == overflow_at ? 1e39 : 0.05);  // Adam moves each parameter by about lr: +-Inf in float
      Points b = rows(train_set, cursor.next());
      Var loss = cross_entropy(model(constant(b.x)), Indices(b.labels));
      if (always_nan || (poison_at_step_7 && step == 7)) loss = loss * constant(Tensor::full(loss.value().shape(), NAN));
      // d/dw √(0·w²) = 0·w / √0 = NaN, while the value √0 = 0 leaves the loss as it is.
      if (poison_gradient_at_step_7 && step == 7) loss = loss + sum(sqrt(square(model.out->weight) * 0.0f));
      trainer.step(loss);
      if (trainer.due_for_log()) trainer.log_train();
      if (trainer.due_for_validation()) validate();
    }
    if (trainer.due_for_test()) trainer.log_test({0.0, {{"best_step", static_cast<double>(trainer.load_best())}}});
    return trainer.steps_taken();
  }
};

std::vector<int64_t> steps_of(const std::vector<nlohmann::json>& lines) {
  std::vector<int64_t> steps;
  for (const auto& j : lines) steps.push_back(j["step"].get<int64_t>());
  return steps;
}

}  // namespace

TEST_CASE("trainer: a user's model learns; train lines every --log-every, validation every eval_every and at the end") {
  test::TempDir dir("loop_cadence");
  QuadrantRun quadrants;
  quadrants.options.steps = 42;  // not a multiple of either interval: the last step logs and validates too
  CHECK(quadrants.train(dir.path / "run") == 42);
  auto train = test::metric_lines(dir.path / "run", "train");
  auto valid = test::metric_lines(dir.path / "run", "valid");
  auto test_lines = test::metric_lines(dir.path / "run", "test");
  CHECK(steps_of(train) == std::vector<int64_t>{4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 42});
  CHECK(steps_of(valid) == std::vector<int64_t>{0, 10, 20, 30, 40, 42});
  REQUIRE(test_lines.size() == 1);
  // 256 points in batches of 32: 8 batches per epoch.
  CHECK(train.back()["epoch"].get<double>() == doctest::Approx(42.0 / 8.0));
  CHECK(valid.front()["loss"].get<double>() > valid.back()["loss"].get<double>() * 2);  // it learned
  CHECK(valid.back()["accuracy"].get<double>() >= 90.0);
  CHECK(fs::exists(dir.path / "run" / "checkpoint.safetensors"));
}

TEST_CASE("trainer: best.safetensors keeps the highest score, and load_best returns its step") {
  test::TempDir dir("loop_best");
  QuadrantRun quadrants;
  quadrants.score_at = [](int64_t step) { return step == 20 ? 5.0 : static_cast<double>(step) / 100.0; };
  quadrants.train(dir.path / "run");
  auto test_lines = test::metric_lines(dir.path / "run", "test");
  REQUIRE(test_lines.size() == 1);
  CHECK(test_lines[0]["best_step"].get<int64_t>() == 20);
}

TEST_CASE("trainer: --stop-after, then --resume, logs the uninterrupted run's losses bit for bit") {
  test::TempDir dir("loop_resume");
  QuadrantRun whole;
  whole.train(dir.path / "whole");
  QuadrantRun first_part;
  first_part.options.stop_after = 20;
  CHECK(first_part.train(dir.path / "resumed") == 20);
  CHECK(test::metric_lines(dir.path / "resumed", "test").empty());  // stopped: no final test
  QuadrantRun second_part;
  CHECK(second_part.train(dir.path / "resumed", /*resume=*/true) == 40);
  for (const char* split : {"train", "valid", "test"}) {
    auto a = test::metric_lines(dir.path / "whole", split), b = test::metric_lines(dir.path / "resumed", split);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(split);
      CAPTURE(i);
      CHECK(a[i]["step"] == b[i]["step"]);
      CHECK(a[i]["loss"].get<double>() == b[i]["loss"].get<double>());  // exact, not approximate
    }
  }
}

TEST_CASE("trainer: a --train-minutes budget ends training at the first step past it, validated and tested") {
  test::TempDir dir("loop_budget");
  QuadrantRun quadrants;
  quadrants.options.train_minutes = 1e-9;  // 60 ns: every step ends past it
  CHECK(quadrants.train(dir.path / "run") == 1);
  CHECK(steps_of(test::metric_lines(dir.path / "run", "train")) == std::vector<int64_t>{1});
  CHECK(steps_of(test::metric_lines(dir.path / "run", "valid")) == std::vector<int64_t>{0, 1});
  CHECK(test::metric_lines(dir.path / "run", "test").size() == 1);
  std::ifstream log(dir.path / "run" / "train.log");
  const std::string text{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  CHECK(text.find("stopping after step 1:") != std::string::npos);
  CHECK(text.find("(--train-minutes 1e-09)") != std::string::npos);

  // Resumed, a spent budget trains nothing more: no new train or valid line.
  QuadrantRun resumed;
  resumed.options.train_minutes = 1e-9;
  CHECK(resumed.train(dir.path / "run", /*resume=*/true) == 1);
  CHECK(steps_of(test::metric_lines(dir.path / "run", "train")) == std::vector<int64_t>{1});
  CHECK(steps_of(test::metric_lines(dir.path / "run", "valid")) == std::vector<int64_t>{0, 1});

  QuadrantRun roomy;  // a budget the steps end before: --steps decides
  roomy.options.train_minutes = 60;
  CHECK(roomy.train(dir.path / "roomy") == 40);
}

TEST_CASE("trainer: a NaN loss stops the run with the step named and keeps the last checkpoint") {
  test::TempDir dir("loop_nan");
  QuadrantRun quadrants;
  quadrants.poison_at_step_7 = true;
  test::check_error([&] { quadrants.train(dir.path / "run"); }, "step 7", "loss is NaN");
  CHECK(fs::exists(dir.path / "run" / "checkpoint.safetensors"));  // the step-0 one
}

TEST_CASE("trainer: a NaN gradient with a finite loss stops the run naming the step and the parameter") {
  test::TempDir dir("loop_nan_gradient");
  QuadrantRun quadrants;
  quadrants.poison_gradient_at_step_7 = true;
  test::check_error([&] { quadrants.train(dir.path / "run"); }, "gradient of out.weight (NaN) is not finite",
                    "at step 7; stopping (the last good checkpoint is kept");
}

TEST_CASE("trainer: with skip_nonfinite a NaN step is skipped, noted, and training goes on unharmed") {
  test::TempDir dir("loop_skip");
  QuadrantRun quadrants;
  quadrants.poison_gradient_at_step_7 = true;
  quadrants.options.skip_nonfinite = true;
  CHECK(quadrants.train(dir.path / "run") == 40);
  auto valid = test::metric_lines(dir.path / "run", "valid");
  REQUIRE(!valid.empty());
  CHECK(std::isfinite(valid.back()["loss"].get<double>()));
  CHECK(valid.back()["accuracy"].get<double>() >= 90.0);  // the NaN never reached the weights
  std::ifstream log(dir.path / "run" / "train.log");
  const std::string text{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  CHECK(text.find("step 7: gradient of out.weight (NaN) is not finite; step skipped") != std::string::npos);
}

TEST_CASE("trainer: with skip_nonfinite, ten non-finite steps in a row stop the run") {
  test::TempDir dir("loop_skip_all");
  QuadrantRun quadrants;
  quadrants.options.skip_nonfinite = true;
  quadrants.always_nan = true;
  test::check_error([&] { quadrants.train(dir.path / "run"); }, "10 steps in a row", "the last at step 10");
}

TEST_CASE("trainer: an update that overflows is never saved; the last good checkpoint is kept") {
  test::TempDir dir("trainer_overflow");
  QuadrantRun quadrants;
  quadrants.overflow_at = 20;  // a validation step: finite loss and gradients, infinite parameters after the update
  test::check_error([&] { quadrants.train(dir.path / "run"); }, "after step 20, parameter",
                    "is not finite (an update overflowed)");
  const Checkpoint kept = load_checkpoint((dir.path / "run" / "checkpoint.safetensors").string());
  CHECK(kept.metadata.at("step") == "10");
  for (const auto& [name, tensor] : kept.tensors)
    for (float v : tensor.span()) REQUIRE(std::isfinite(v));
  // It resumes, and with a sane learning rate trains to the end.
  QuadrantRun resumed;
  CHECK(resumed.train(dir.path / "run", /*resume=*/true) == 40);
}

TEST_CASE("trainer: a checkpoint holding a NaN is refused on --resume") {
  test::TempDir dir("trainer_nan_checkpoint");
  QuadrantRun first;
  first.options.stop_after = 10;
  first.train(dir.path / "run");
  const std::string file = (dir.path / "run" / "checkpoint.safetensors").string();
  Checkpoint poisoned = load_checkpoint(file);
  for (auto& [name, tensor] : poisoned.tensors)
    if (name == "param.out.bias") tensor.data()[1] = NAN;
  save_checkpoint(file, poisoned);
  QuadrantRun resumed;
  test::check_error([&] { resumed.train(dir.path / "run", /*resume=*/true); }, file,
                    "parameter out.bias holds a NaN or an infinity; it cannot be resumed");
}

TEST_CASE("trainer: with skip_nonfinite an overflowed update goes back to the last good checkpoint and trains on") {
  test::TempDir dir("trainer_overflow_skip");
  QuadrantRun quadrants;
  quadrants.overflow_at = 15;  // the next step's loss is NaN: skipped, and the model restored from step 10
  quadrants.options.skip_nonfinite = true;
  CHECK(quadrants.train(dir.path / "run") == 40);
  auto valid = test::metric_lines(dir.path / "run", "valid");
  REQUIRE(!valid.empty());
  CHECK(valid.back()["accuracy"].get<double>() >= 90.0);
  std::ifstream log(dir.path / "run" / "train.log");
  const std::string text{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
  CHECK(text.find("the model and optimizer of step 10 are restored") != std::string::npos);
}

TEST_CASE("trainer: best.safetensors and checkpoint.safetensors hold the model for rg::load") {
  test::TempDir dir("trainer_load");
  QuadrantRun quadrants;
  quadrants.train(dir.path / "run");
  for (const char* file : {"best.safetensors", "checkpoint.safetensors"}) {
    CAPTURE(file);
    Generator other(99);
    QuadrantNet model(other);  // other weights, until loaded
    load(model, (dir.path / "run" / file).string());
    const Tensor saved = load_checkpoint((dir.path / "run" / file).string()).find("param.out.weight")->clone();
    REQUIRE(saved.numel() == model.out->weight.value().numel());
    for (int64_t i = 0; i < saved.numel(); ++i) CHECK(model.out->weight.value().data()[i] == saved.data()[i]);
  }
}

namespace {

// An accumulating run: `steps` optimizer steps on batches of 32 examples,
// each given as `k` micro-batches of 32/k; the same examples in the same
// order whatever k. Returns the calls of step() and the parameters after.
struct Accumulated {
  int64_t calls = 0;
  std::vector<Tensor> parameters;
};
Accumulated train_accumulating(const fs::path& dir, int64_t k, int64_t steps) {
  Run run(RunOptions{.threads = 1, .out = dir.string(), .log_every = 2});
  const Points data = quadrant_points(256, 1);
  Generator init(7);
  QuadrantNet model(init);
  // SGD: an update is lr·g, so gradients equal to float rounding leave
  // parameters equal to float rounding (Adam's g/√v would magnify the
  // rounding of a gradient near 0).
  Sgd sgd(model.named_parameters(), SgdOptions{.lr = 0.5});
  Trainer trainer(run, model, sgd, {.steps = steps, .eval_every = 3, .accumulate_grad_batches = k});
  trainer.start();
  if (trainer.due_for_validation()) trainer.validate({});
  Accumulated out;
  int64_t next = 0;
  while (trainer.running()) {
    Batch batch;
    for (int64_t i = 0; i < 32 / k; ++i) batch.push_back(next++ % 256);
    const Points b = rows(data, batch);
    trainer.step(cross_entropy(model(constant(b.x)), Indices(b.labels)));
    ++out.calls;
    if (trainer.due_for_log()) trainer.log_train();
    if (trainer.due_for_validation()) trainer.validate({});
  }
  for (const auto& [name, p] : model.named_parameters()) out.parameters.push_back(p.value().clone());
  return out;
}

}  // namespace

TEST_CASE("trainer: k micro-batches of n train as one batch of k·n; steps, logs and validations count updates") {
  test::TempDir dir("accumulate");
  const Accumulated whole = train_accumulating(dir.path / "k1", 1, 6);
  const Accumulated parts = train_accumulating(dir.path / "k4", 4, 6);
  CHECK(whole.calls == 6);
  CHECK(parts.calls == 24);
  // The gradient of a mean over 32 examples, summed as 4 means of 8 each
  // weighted 1/4: the same sum in another grouping, so each gradient agrees
  // to a few float roundings (|g| < 2 here: a relative 2⁻²⁴ per addition of
  // 32 terms is under 1e-5), and six updates of lr 0.5 move the parameters
  // by at most 6 · 0.5 · 1e-5 = 3e-5 apart.
  REQUIRE(whole.parameters.size() == parts.parameters.size());
  for (size_t i = 0; i < whole.parameters.size(); ++i)
    for (int64_t j = 0; j < whole.parameters[i].numel(); ++j)
      CHECK(std::fabs(parts.parameters[i].data()[j] - whole.parameters[i].data()[j]) <= 3e-5);
  // Every line counts optimizer steps, and the train lines' losses (the mean
  // of the micro-batches') are the whole batches' losses.
  for (const char* split : {"train", "valid"}) {
    const auto a = test::metric_lines(dir.path / "k1", split), b = test::metric_lines(dir.path / "k4", split);
    CHECK(steps_of(a) == steps_of(b));
    if (std::string(split) == "train")
      for (size_t i = 0; i < a.size(); ++i)
        CHECK(b[i]["loss"].get<double>() == doctest::Approx(a[i]["loss"].get<double>()).epsilon(1e-5));
  }
  CHECK(steps_of(test::metric_lines(dir.path / "k4", "train")) == std::vector<int64_t>{2, 4, 6});
  CHECK(steps_of(test::metric_lines(dir.path / "k4", "valid")) == std::vector<int64_t>{0, 3, 6});
}

TEST_CASE("trainer: a gradient left by a backward outside the trainer is added into the next step, not wiped") {
  // Two runs of one step on the same batch; in the second, the user ran a
  // backward of the same loss before the step: the update is then twice the
  // first run's (SGD, lr·g), as PyTorch's loop would make it.
  const Points data = quadrant_points(32, 1);
  auto one_step = [&](const fs::path& dir, bool backward_before) {
    Run run(RunOptions{.threads = 1, .out = dir.string()});
    Generator init(7);
    QuadrantNet model(init);
    const Tensor start = model.out->weight.value().clone();
    Sgd sgd(model.named_parameters(), SgdOptions{.lr = 0.5});
    Trainer trainer(run, model, sgd, {.steps = 1, .eval_every = 1});
    trainer.start();
    auto loss = [&] { return cross_entropy(model(constant(data.x)), Indices(data.labels)); };
    if (backward_before) {
      loss().backward();
      tape().clear();
    }
    trainer.step(loss());
    Tensor moved = model.out->weight.value().clone();
    for (int64_t i = 0; i < moved.numel(); ++i) moved.data()[i] -= start.data()[i];
    return moved;
  };
  test::TempDir dir("outside_backward");
  const Tensor once = one_step(dir.path / "a", false), twice = one_step(dir.path / "b", true);
  for (int64_t i = 0; i < once.numel(); ++i)
    CHECK(twice.data()[i] == doctest::Approx(2 * once.data()[i]).epsilon(1e-5));
}

TEST_CASE("trainer: under bf16 products each step rounds the weights once, after the last update") {
  if (!bf16_products_supported()) {
    MESSAGE("skipped: no bf16 products here (they need oneDNN and a CPU with AVX-512 or newer)");
    return;
  }
  // While the trainer runs a step, a product with a weight reads the bf16
  // copy made for that step (core/gemm.h, Bf16WeightCache). It must be the
  // weight as the last update left it: against the same product of a copy of
  // the weight, which is rounded at the product, it differs only in the order
  // of its f32 sums (at most 2·(K + 2)·u·Σ|x||w| apart, as in test_gemm.cpp),
  // where a copy one update old would be ~lr·|g| away. After the step the
  // cache is closed: the weight's own product is the copy's, bit for bit.
  const GemmLibrary library = gemm_library();
  const int64_t min_work = bf16_min_work();
  set_gemm_library(GemmLibrary::OneDNN);
  set_bf16_min_work(0);  // every product on oneDNN in bf16 (those of at least 32³ multiply-adds)
  test::TempDir dir("bf16_weights");
  Run run(RunOptions{.threads = 1, .out = dir.path.string()});
  Generator gen(5);
  const int64_t n = 64;
  QuadrantNet model(gen, n, n);  // products of 64³ multiply-adds: on oneDNN
  const Tensor x = normal(Shape{n, n}, 0.0f, 1.0f, gen);
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back(static_cast<int32_t>(i % 4));
  Sgd sgd(model.named_parameters(), SgdOptions{.lr = 0.5});
  Trainer trainer(run, model, sgd, {.steps = 4, .eval_every = 4, .precision = Precision::BF16});
  trainer.start();
  // x·Wᵀ for the hidden layer's weight and for a copy of it.
  const float* w = model.hidden->weight.value().data();
  auto product = [&](const float* weight) {
    std::vector<float> y(static_cast<size_t>(n * n));
    gemm(false, true, n, n, n, 1.0f, x.data(), weight, 0.0f, y.data());
    return y;
  };
  const double u = std::ldexp(1.0, -24);
  if (trainer.due_for_validation()) trainer.validate({});
  while (trainer.running()) {
    const std::vector<float> copy(w, w + n * n);
    const std::vector<float> cached = product(w), converted = product(copy.data());
    double worst = 0.0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double size = 0.0;
        for (int64_t l = 0; l < n; ++l) size += std::fabs(double(x.data()[i * n + l]) * copy[j * n + l]);
        worst = std::max(worst, std::fabs(double(cached[i * n + j]) - converted[i * n + j]) /
                                    (2.0 * double(n + 2) * u * size));
      }
    CHECK(worst <= 1.0);
    trainer.step(cross_entropy(model(constant(x)), Indices(labels)));
    const std::vector<float> updated(w, w + n * n);
    CHECK(product(w) == product(updated.data()));
    if (trainer.due_for_validation()) trainer.validate({});
  }
  CHECK(trainer.steps_taken() == 4);
  set_product_precision(Precision::F32);
  set_bf16_min_work(min_work);
  set_gemm_library(library);
}

TEST_CASE("trainer: clear errors for calls out of order") {
  test::TempDir dir("trainer_errors");
  RunOptions run_options;
  run_options.out = (dir.path / "run").string();
  CLI::App app{"errors"};
  add_run_options(app, run_options);
  Run run(run_options, run_settings(app));
  Generator init(1);
  QuadrantNet model(init);
  Adam adam(model.named_parameters(), AdamOptions{});
  test::check_error([&] { Trainer(run, model, adam, {.steps = 0}); }, "Trainer", "steps is 0");
  Trainer trainer(run, model, adam, {});
  test::check_error([&] { trainer.running(); }, "Trainer::running", "call start() first");
  test::check_error([&] { trainer.load_best(); }, "load_best", "no best checkpoint");
  trainer.keep("init", init);
  test::check_error([&] { trainer.keep("init", init); }, "Trainer::keep", "two generators named 'init'");
  trainer.start();
  test::check_error([&] { trainer.validate({}); }, "Trainer::validate", "when due_for_validation() says yes");
  test::check_error([&] { trainer.due_for_test(); }, "Trainer::due_for_test", "after the loop");
  test::check_error([&] { trainer.keep("late", init); }, "Trainer::keep", "before start()");
}
