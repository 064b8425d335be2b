// Mistakes a PyTorch user makes on a first program here, each made loud or
// impossible: a submodule that was never registered, a DataLoader built from
// a temporary, a value used after backward, gradcheck on a broken function,
// a model saved without the settings that rebuild it, a training loop
// beside another busy process.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;

namespace {

// Collects the library's warnings while alive.
struct CapturedWarnings {
  std::vector<std::string> messages;
  WarningHandler previous;
  CapturedWarnings() {
    previous = set_warning_handler([this](const std::string& m) { messages.push_back(m); });
  }
  ~CapturedWarnings() { set_warning_handler(previous); }
};

// Two layers, the second kept in a member but never registered: the mistake.
struct ForgetfulModel : Module {
  ForgetfulModel() {
    register_module("first", first, std::make_shared<Linear>(3, 4));
    second = std::make_shared<Linear>(4, 2);  // should be register_module("second", ...)
  }
  Var forward(const Var& x) { return (*second)(relu((*first)(x))); }
  std::shared_ptr<Linear> first, second;
};

struct CarefulModel : Module {
  CarefulModel() {
    register_module("first", first, std::make_shared<Linear>(3, 4));
    register_module("second", second, std::make_shared<Linear>(4, 2));
  }
  Var forward(const Var& x) { return (*second)(relu((*first)(x))); }
  std::shared_ptr<Linear> first, second;
};

Var batch() { return constant(Tensor::from(Shape{2, 3}, {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f})); }

}  // namespace

// Runs first (doctest orders by file and line): no optimizer exists yet.
TEST_CASE("without an optimizer, gradients of hand-made leaves are the program's own business") {
  CapturedWarnings warnings;
  Var w = parameter(Tensor::ones(Shape{3, 2}));
  sum(matmul(batch(), w)).backward();
  CHECK(warnings.messages.empty());
}

TEST_CASE("a submodule that was never registered is named once, when backward gives it a gradient") {
  CapturedWarnings warnings;
  ForgetfulModel model;
  Adam adam(model.named_parameters(), {});
  CHECK(model.named_parameters().size() == 2);  // first.weight, first.bias only
  for (int step = 0; step < 3; ++step) {
    adam.zero_grad();
    sum(model.forward(batch())).backward();
    adam.step();
  }
  REQUIRE(warnings.messages.size() == 1);  // once, not every step
  const std::string& m = warnings.messages[0];
  CHECK_MESSAGE(m.find("2 trainable leaves that no optimizer updates") != std::string::npos, m);
  CHECK_MESSAGE(m.find("'weight' [2, 4]") != std::string::npos, m);
  CHECK_MESSAGE(m.find("'bias' [2]") != std::string::npos, m);
  CHECK_MESSAGE(m.find("register_module") != std::string::npos, m);

  CapturedWarnings quiet;
  CarefulModel careful;
  Adam careful_adam(careful.named_parameters(), {});
  sum(careful.forward(batch())).backward();
  careful_adam.step();
  CHECK(quiet.messages.empty());
}

TEST_CASE("a DataLoader built from a temporary holds its examples") {
  auto make = [] {
    LabelledTensors data{Tensor::zeros(Shape{8, 2}), {}};
    for (int32_t i = 0; i < 8; ++i) {
      data.inputs.data()[2 * i] = static_cast<float>(i);
      data.labels.push_back(i % 3);
    }
    return data;
  };
  DataLoader loader(make(), 4, {.shuffle = false});
  // Whatever the temporary's memory now holds, the loader must not read it.
  std::vector<std::vector<int32_t>> churn(64, std::vector<int32_t>(8, 777));
  for (int b = 0; b < 2; ++b) {
    const LabelledBatch batch = loader.next();
    REQUIRE(batch.size() == 4);
    for (int i = 0; i < 4; ++i) {
      CHECK(batch.labels.values[static_cast<size_t>(i)] == (4 * b + i) % 3);
      CHECK(batch.inputs.data()[2 * i] == static_cast<float>(4 * b + i));
    }
  }
}

TEST_CASE("a value used after backward: the refusal says what to use instead, and those work") {
  Var w = parameter(Tensor::from(Shape{3, 2}, {0.1f, 0.2f, -0.3f, 0.4f, 0.5f, -0.6f}));
  Var logits = matmul(batch(), w);
  Var loss = cross_entropy(logits, Indices({0, 1}));
  loss.backward();
  try {
    softmax(logits);
    FAIL("softmax of a released graph's value was accepted");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK_MESSAGE(m.find("NoGradGuard") != std::string::npos, m);
    CHECK_MESSAGE(m.find("detach()") != std::string::npos, m);
    CHECK_MESSAGE(m.find("item()") != std::string::npos, m);
  }
  {
    NoGradGuard no_grad;
    CHECK(softmax(logits).shape() == Shape{2, 2});
  }
  CHECK(softmax(logits.detach()).shape() == Shape{2, 2});
  CHECK(std::isfinite(loss.item()));
}

TEST_CASE("gradcheck: an undefined output is an error, and the caller's graph is left alone") {
  CHECK_THROWS_WITH_AS(gradcheck([](const std::vector<Var>&) { return Var(); }, {Tensor::ones(Shape{2})}),
                       "gradcheck: the function returned an undefined Var", Error);

  // The caller is half way through a step when it checks an op.
  CapturedWarnings warnings;  // w is a hand-made leaf no optimizer updates
  Var w = parameter(Tensor::from(Shape{2}, {1.5f, -2.0f}));
  Var loss = sum(square(w));
  const GradCheckResult check_tanh =
      gradcheck([](const std::vector<Var>& x) { return tanh(x[0]); }, {Tensor::from(Shape{3}, {0.1f, -0.4f, 0.9f})});
  CHECK(check_tanh.ok);
  loss.backward();  // still possible: gradcheck did not clear the tape
  CHECK(w.grad().data()[0] == doctest::Approx(3.0f));
  CHECK(w.grad().data()[1] == doctest::Approx(-4.0f));
}

TEST_CASE("save and load carry string metadata with the weights") {
  test::TempDir tmp("traps_metadata");
  const std::string path = (tmp.path / "model.safetensors").string();
  CarefulModel model, copy;
  const std::string vocabulary = "a\nb\n\"quoted\"\n\xc3\xa9";
  save(model, path, {{"vocabulary", vocabulary}, {"layers", "2"}});
  const Metadata meta = load(copy, path);
  CHECK(meta.size() == 2);  // without the file's own "format"
  CHECK(meta.at("vocabulary") == vocabulary);
  CHECK(meta.at("layers") == "2");
  CHECK(copy.first->named_parameters()[0].second.value().data()[0] ==
        model.first->named_parameters()[0].second.value().data()[0]);
  CHECK_THROWS_AS(save(model, path, {{"format", "mine"}}), Error);
}

TEST_CASE("a training loop of its own keeps its threads on a busy machine, and follows the free cores when asked") {
  const auto look = look_at_free_cores();
  if (!look) {
    MESSAGE("skipped: /proc/stat cannot be read here");
    return;
  }
  // Busy processes on all cores but one.
  std::vector<pid_t> busy;
  for (int i = 0; i < look->cores - 1; ++i) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
      for (;;) {
      }
    busy.push_back(child);
  }
  set_num_threads(2);
  CarefulModel model;
  Adam adam(model.named_parameters(), {});
  auto step = [&] {
    usleep(15000);  // more than kMinLookGapSeconds between looks
    adam.zero_grad();
    sum(model.forward(batch())).backward();
    adam.step();
  };
  // Nothing about threads is asked for: the count stays what was set.
  for (int i = 0; i < 5; ++i) {
    step();
    CHECK(num_threads() == 2);
  }
  // Asked for, between steps, it goes down to the free core.
  FreeCoreFollower follower;
  for (int i = 0; i < 20 && num_threads() != 1; ++i) {
    step();
    follower.follow();
  }
  for (pid_t child : busy) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
  }
  CHECK(num_threads() == 1);
  set_num_threads(2);
}
