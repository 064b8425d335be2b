// What the two MNIST programs share: where the data is, and a stand-in when
// it is not there.
#pragma once
#include <rmsgrad/rmsgrad.h>

#include <cstdio>
#include <filesystem>
#include <string>

// The MNIST files in `dir` (the official names; the training images may be a
// prefix, as ../shared/data/mnist holds the first 17,435), or, when they are
// absent, a small synthetic stand-in: ten random "digit" prototypes plus noise,
// so that the program still runs end to end on a fresh clone.
struct MnistData {
  rg::LabelledTensors train, test;
  bool real = false;
};

inline MnistData load_mnist_or_standin(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  const fs::path train_images = d / "train-images-idx3-ubyte.first17435.gz";
  const fs::path train_labels = d / "train-labels-idx1-ubyte.first17435";
  const fs::path test_images = d / "t10k-images-idx3-ubyte.gz";
  const fs::path test_labels = d / "t10k-labels-idx1-ubyte.gz";
  MnistData data;
  if (fs::exists(train_images) && fs::exists(test_images)) {
    data.train = rg::read_mnist(train_images.string(), train_labels.string());
    data.test = rg::read_mnist(test_images.string(), test_labels.string());
    data.real = true;
    return data;
  }
  std::printf("note: no MNIST in %s: using a synthetic stand-in (random prototypes plus noise); "
              "its accuracy says nothing about MNIST\n", dir.c_str());
  rg::Generator gen(2024);
  const rg::Tensor prototypes = rg::uniform(rg::Shape{10, 784}, 0.0f, 1.0f, gen);
  auto make = [&](int64_t n) {
    rg::LabelledTensors set{rg::normal(rg::Shape{n, 784}, 0.0f, 0.35f, gen), {}};
    for (int64_t i = 0; i < n; ++i) {
      const int32_t label = static_cast<int32_t>(gen.randint(10));
      set.labels.push_back(label);
      for (int64_t j = 0; j < 784; ++j) set.inputs.data()[i * 784 + j] += prototypes.data()[label * 784 + j];
    }
    return set;
  };
  data.train = make(2000);
  data.test = make(500);
  return data;
}

// The network both programs build: the saved file holds its weights by name.
inline std::shared_ptr<rg::MLP> mnist_mlp() {
  return std::make_shared<rg::MLP>(784, std::vector<int64_t>{512, 256}, 10,
                                   rg::MLPOptions{.norm = {.kind = rg::NormKind::RMSNorm}, .dropout = 0.2f});
}

// Test accuracy in evaluation mode (no dropout, nothing recorded).
inline double test_accuracy(rg::MLP& model, const rg::LabelledTensors& test) {
  rg::NoGradGuard no_grad;
  model.eval();
  int64_t right = 0;
  rg::for_each_batch(test, 1000, [&](const rg::LabelledBatch& batch) {
    const rg::Tensor scores = model.forward(rg::constant(batch.inputs)).value();
    right += static_cast<int64_t>(rg::accuracy(scores, batch.labels) * static_cast<double>(batch.size()) + 0.5);
  });
  model.train();
  return static_cast<double>(right) / static_cast<double>(test.size());
}
