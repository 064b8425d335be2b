// Exact resume: a run stopped at a checkpoint and continued in a fresh
// process state gives bit-identical losses to a run that never stopped.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "rmsgrad/train/training_progress.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

// A small classifier with every kind of state a real run has: parameters, a
// norm, dropout (a generator), Adam moments, and a shuffled data cursor.
struct Net : Module {
  std::shared_ptr<Linear> in, out;
  std::shared_ptr<Norm> norm;
  Net(Generator& gen) {
    register_module("in", in, std::make_shared<Linear>(4, 32, gen));
    NormOptions o;
    o.kind = NormKind::BatchNorm;  // has buffers too
    register_module("norm", norm, make_norm(o, 32));
    register_module("out", out, std::make_shared<Linear>(32, 3, gen));
  }
};

struct Experiment {
  Generator init_gen{7}, dropout_gen{8};
  Net net{init_gen};
  Adam adam;
  BatchCursor cursor{shuffled_batches(96, 16), 9};
  Tensor x;
  std::vector<int32_t> y;

  Experiment() : adam(net.named_parameters(), AdamOptions{.lr = 0.01}) {
    Generator data(10);
    x = normal(Shape{96, 4}, 0.0f, 1.0f, data);
    for (int64_t i = 0; i < 96; ++i) y.push_back((x.at({i, 0}) + x.at({i, 1}) > 0) + (x.at({i, 2}) > 0.5f));
  }

  // What the trainer saves with the model and the optimizer (train/trainer.h).
  Metadata progress(int64_t step) const {
    return progress_metadata({.step = step, .epoch = cursor.epoch(), .cursor = cursor.state()});
  }
  NamedGenerators generators() { return {{"dropout", &dropout_gen}}; }

  float step() {
    const Batch& batch = cursor.next();
    Tensor bx = Tensor::empty(Shape{static_cast<int64_t>(batch.size()), 4});
    std::vector<int32_t> by;
    for (size_t i = 0; i < batch.size(); ++i) {
      for (int j = 0; j < 4; ++j) bx.data()[i * 4 + j] = x.at({batch[i], j});
      by.push_back(y[batch[i]]);
    }
    Var h = relu(net.norm->forward(net.in->forward(constant(bx))));
    h = dropout(h, 0.3f, true, dropout_gen);
    Var loss = cross_entropy(net.out->forward(h), Indices(by));
    adam.zero_grad();
    loss.backward();
    clip_grad_norm(net.named_parameters(), 1.0);
    adam.step();
    tape().clear();
    return loss.item();
  }
};

}  // namespace

TEST_CASE("a resumed run repeats the uninterrupted run's losses bit for bit") {
  set_num_threads(1);
  fs::path dir = fs::temp_directory_path() / ("rg_resume_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "checkpoint.safetensors").string();

  std::vector<float> straight;
  {
    Experiment e;
    for (int s = 0; s < 30; ++s) straight.push_back(e.step());  // crosses epoch boundaries (6 batches each)
  }
  std::vector<float> resumed;
  {
    Experiment e;
    for (int s = 0; s < 13; ++s) resumed.push_back(e.step());
    save_training_state(path, e.net, e.adam, e.progress(13), e.generators());
    for (int s = 0; s < 5; ++s) e.step();  // work after the checkpoint is lost
  }
  {
    Experiment e;  // a fresh start: other weights, generators at zero
    e.step();      // and even a step already taken: everything must be overwritten
    const TrainingProgress p = read_training_progress(load_training_state(path, e.net, e.adam, e.generators()), path);
    e.cursor.restore(*p.cursor);
    CHECK(p.step == 13);
    CHECK(p.epoch == 2);
    for (int s = 13; s < 30; ++s) resumed.push_back(e.step());
  }
  REQUIRE(resumed.size() == straight.size());
  for (size_t i = 0; i < straight.size(); ++i) CHECK_MESSAGE(resumed[i] == straight[i], "step " << i);
  set_num_threads(2);
  fs::remove_all(dir);
}

TEST_CASE("a checkpoint of another model is refused as such, naming the first parameter that differs") {
  fs::path dir = fs::temp_directory_path() / ("rg_resume2_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "checkpoint.safetensors").string();
  Experiment e;
  save_training_state(path, e.net, e.adam, e.progress(0), e.generators());
  Generator gen(1);
  Linear other(4, 32, gen);
  Adam adam(other.named_parameters(), AdamOptions{});
  CHECK_THROWS_WITH_AS(load_training_state(path, other, adam),
                       doctest::Contains("holds another model: first difference: the model's parameter 'weight' is "
                                         "not in it, which has 'in.bias' instead (2 of the model's 2 parameters"),
                       Error);
  // A generator the file lacks is not what is said first: the model differs.
  Generator noise(3);
  CHECK_THROWS_WITH_AS(load_training_state(path, other, adam, {{"a generator of its own", &noise}}),
                       doctest::Contains("holds another model"), Error);
  fs::remove_all(dir);
}
