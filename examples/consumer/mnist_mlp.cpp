// Trains an MLP on MNIST and saves it: the whole workflow of a model of
// one's own against the installed library (Module + Adam + loader + save).
//
//   mnist_mlp [MNIST folder, default ../shared/data/mnist] [output file, default mnist_mlp.safetensors]
//
// 784 → 512 → 256 → 10 with RMSNorm before each ReLU and dropout 0.2 after
// it; Adam, batches of 128 randomly shifted images, 20 epochs with a cosine
// learning rate. mnist_eval loads the file and finds the same test accuracy.
#include <rmsgrad/rmsgrad.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>

#include "mnist_data.h"

// Each 28 × 28 image moved by up to two pixels in x and y (zeros fill in):
// with only 17,435 training images, this augmentation is worth about half a
// point of test accuracy.
rg::Tensor randomly_shifted(const rg::Tensor& images, rg::Generator& gen) {
  rg::Tensor out = rg::Tensor::zeros(images.shape());
  for (int64_t i = 0; i < images.shape()[0]; ++i) {
    const int64_t dx = gen.randint(5) - 2, dy = gen.randint(5) - 2;
    const float* src = images.data() + i * 784;
    float* dst = out.data() + i * 784;
    for (int64_t y = std::max<int64_t>(0, dy); y < std::min<int64_t>(28, 28 + dy); ++y)
      for (int64_t x = std::max<int64_t>(0, dx); x < std::min<int64_t>(28, 28 + dx); ++x)
        dst[y * 28 + x] = src[(y - dy) * 28 + (x - dx)];
  }
  return out;
}

int main(int argc, char** argv) try {
  const std::string dir = argc > 1 ? argv[1] : "../shared/data/mnist";
  const std::string out = argc > 2 ? argv[2] : "mnist_mlp.safetensors";
  const auto start = std::chrono::steady_clock::now();
  const MnistData data = load_mnist_or_standin(dir);
  std::printf("training on %lld images, testing on %lld\n", static_cast<long long>(data.train.size()),
              static_cast<long long>(data.test.size()));

  rg::manual_seed(1);  // the default generator initialises the layers
  auto model = mnist_mlp();
  rg::Adam adam(model->named_parameters(), {.lr = 1e-3});
  rg::DataLoader loader(data.train, 128, {.seed = 1});
  rg::Generator shifts(2);
  const int epochs = 20;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    // A cosine learning rate, from 1e-3 towards 0 over the run.
    adam.set_lr(1e-3 * 0.5 * (1.0 + std::cos(3.14159265358979 * epoch / epochs)));
    double loss_sum = 0.0;
    for (int64_t b = 0; b < loader.batches_per_epoch(); ++b) {
      rg::LabelledBatch batch = loader.next();
      adam.zero_grad();
      rg::Var loss = rg::cross_entropy(model->forward(rg::constant(randomly_shifted(batch.inputs, shifts))), batch.labels);
      loss.backward();
      adam.step();
      loss_sum += loss.item();
    }
    std::printf("epoch %d  train loss %.4f  test accuracy %.2f%%\n", epoch + 1,
                loss_sum / static_cast<double>(loader.batches_per_epoch()), 100.0 * test_accuracy(*model, data.test));
  }
  rg::save(*model, out);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("final test accuracy %.2f%% in %.1f s; saved %s\n", 100.0 * test_accuracy(*model, data.test), seconds,
              out.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
