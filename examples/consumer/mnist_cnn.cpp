// A small CNN on MNIST, as a PyTorch user writes one: a Sequential of
// Conv2d, GroupNorm, ReLU, MaxPool2d, AvgPool2d, Flatten and Linear fed by a
// DataLoader, a loop of its own with Adam and a cosine schedule, then saved
// with its settings as metadata and loaded back into a fresh model, which
// must score the same.
//
//   mnist_cnn [MNIST folder, default ../shared/data/mnist] [output file, default mnist_cnn.safetensors] [epochs, default 1]
#include <rmsgrad/rmsgrad.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "mnist_data.h"

namespace {

// [N, 1, 28, 28] → conv 5×5 (16) → GroupNorm → ReLU → max pool 2 → conv 5×5 (32) → GroupNorm → ReLU
// → average pool 2 → [N, 32·7·7] → 10 scores.
std::shared_ptr<rg::Sequential> mnist_cnn(int64_t width) {
  auto net = std::make_shared<rg::Sequential>();
  net->add(std::make_shared<rg::Conv2d>(1, width, 5, rg::Conv2dOptions{.padding = 2}));
  net->add(std::make_shared<rg::GroupNorm>(4, width));
  net->add(std::make_shared<rg::ActivationLayer>(rg::Activation::ReLU));
  net->add(std::make_shared<rg::MaxPool2d>(2, 2));
  net->add(std::make_shared<rg::Conv2d>(width, 2 * width, 5, rg::Conv2dOptions{.padding = 2}));
  net->add(std::make_shared<rg::GroupNorm>(8, 2 * width));
  net->add(std::make_shared<rg::ActivationLayer>(rg::Activation::ReLU));
  net->add(std::make_shared<rg::AvgPool2d>(2, 2));
  net->add(std::make_shared<rg::Flatten>());
  net->add(std::make_shared<rg::Linear>(2 * width * 7 * 7, 10));
  return net;
}

rg::Var images(const rg::Tensor& rows) { return rg::constant(rows.reshape(rg::Shape{rows.shape()[0], 1, 28, 28})); }

double test_accuracy(rg::Sequential& model, const rg::LabelledTensors& test) {
  rg::NoGradGuard no_grad;
  model.eval();
  int64_t right = 0;
  rg::for_each_batch(test, 500, [&](const rg::LabelledBatch& batch) {
    right += static_cast<int64_t>(rg::accuracy(model(images(batch.inputs)).value(), batch.labels) *
                                      static_cast<double>(batch.size()) + 0.5);
  });
  model.train();
  return 100.0 * static_cast<double>(right) / static_cast<double>(test.size());
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string dir = argc > 1 ? argv[1] : "../shared/data/mnist";
  const std::string out = argc > 2 ? argv[2] : "mnist_cnn.safetensors";
  const int epochs = argc > 3 ? std::stoi(argv[3]) : 1;
  const auto start = std::chrono::steady_clock::now();
  const MnistData data = load_mnist_or_standin(dir);

  rg::manual_seed(3);
  const int64_t width = 16;
  auto model = mnist_cnn(width);
  rg::Adam adam(model->named_parameters(), {.lr = 2e-3});
  rg::DataLoader loader(data.train, 64, {.seed = 3});
  const int64_t total = epochs * loader.batches_per_epoch();
  rg::CosineSchedule schedule(2e-3, total, 0.0, total / 20);
  for (int64_t step = 1; step <= total; ++step) {
    const rg::LabelledBatch batch = loader.next();
    adam.set_lr(schedule.lr(step));
    adam.zero_grad();
    rg::Var loss = rg::cross_entropy((*model)(images(batch.inputs)), batch.labels);
    loss.backward();
    adam.step();
    if (step % 100 == 0) std::printf("step %lld  loss %.4f\n", static_cast<long long>(step), loss.item());
  }
  const double accuracy = test_accuracy(*model, data.test);
  rg::save(*model, out, {{"width", std::to_string(width)}, {"trained_on", data.real ? "MNIST" : "stand-in"}});

  // Another program would do this: read the settings, build the model, load it.
  auto copy_model = mnist_cnn(16);
  const rg::Metadata meta = rg::load(*copy_model, out);
  if (meta.at("width") != std::to_string(width)) throw rg::Error("the saved width does not round-trip");
  const double reloaded = test_accuracy(*copy_model, data.test);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("final test accuracy %.2f%% after %lld steps in %.1f s; reloaded from %s (width %s, %s): %.2f%%\n",
              accuracy, static_cast<long long>(total), seconds, out.c_str(), meta.at("width").c_str(),
              meta.at("trained_on").c_str(), reloaded);
  return reloaded == accuracy ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
