// Loads the MLP that mnist_mlp saved, in another program, and measures its
// test accuracy: the same figure mnist_mlp printed last.
//
//   mnist_eval [MNIST folder, default ../shared/data/mnist] [model file, default mnist_mlp.safetensors]
#include <rmsgrad/rmsgrad.h>

#include <cstdio>
#include <exception>

#include "mnist_data.h"

int main(int argc, char** argv) try {
  const std::string dir = argc > 1 ? argv[1] : "../shared/data/mnist";
  const std::string file = argc > 2 ? argv[2] : "mnist_mlp.safetensors";
  const MnistData data = load_mnist_or_standin(dir);
  auto model = mnist_mlp();
  rg::load(*model, file);  // strict: every name and shape must match
  std::printf("loaded %s: test accuracy %.2f%%\n", file.c_str(), 100.0 * test_accuracy(*model, data.test));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
