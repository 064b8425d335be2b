// Times one training step of ConvPool-CNN-C (forward with input noise and
// dropout, cross-entropy, backward, Adam) on random images; the PyTorch twin
// is bench/convpool_torch.py and bench/bench_convpool.sh runs both. Prints
// {"impl": "rmsgrad", "norm", "width", "batch", "threads", "step_ms", "steps"}
// with the median step time after two warm-up steps.
//
// Usage: bench_convpool [--norm N] [--width W] [--batch B] [--threads T] [--steps S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "models/convpool_cnn.h"
#include "rmsgrad.h"

using namespace rg;

int main(int argc, char** argv) {
  std::string norm = "layernorm";
  double width = 0.5;
  int64_t batch = 100;
  int threads = 1, steps = 10;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--norm" && i + 1 < argc) norm = argv[++i];
    else if (a == "--width" && i + 1 < argc) width = std::stod(argv[++i]);
    else if (a == "--batch" && i + 1 < argc) batch = std::stoll(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (a == "--steps" && i + 1 < argc) steps = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "bench_convpool: unknown argument '%s' (usage: bench_convpool [--norm N] [--width W] "
                           "[--batch B] [--threads T] [--steps S])\n", a.c_str());
      return 2;
    }
  }
  try {
    set_num_threads(threads);
    ConvPoolCnnOptions options;
    options.norm.kind = parse_norm_kind(norm);
    options.norm.p = 0.125f;
    options.norm.eps = 1e-6f;
    options.width = width;
    Generator init(1), noise(2), data(3);
    ConvPoolCnnC model(options, init, noise);
    Adam adam(model.named_parameters(), AdamOptions{.lr = options.norm.kind == NormKind::None ? 3e-4 : 3e-3});
    Tensor images = normal(Shape{batch, 3, 32, 32}, 0.0f, 1.0f, data);
    std::vector<int32_t> labels(batch);
    for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<int32_t>(data.randint(10));
    if (options.norm.kind == NormKind::WeightNorm) model.init_weight_norm(images);
    auto step = [&] {
      Var loss = cross_entropy(model(constant(images)), Indices(labels));
      adam.zero_grad();
      loss.backward();
      adam.step();
      tape().clear();
    };
    for (int i = 0; i < 2; ++i) step();
    std::vector<double> times;
    for (int i = 0; i < steps; ++i) {
      auto start = std::chrono::steady_clock::now();
      step();
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    std::printf("{\"impl\": \"rmsgrad\", \"norm\": \"%s\", \"width\": %g, \"batch\": %lld, \"threads\": %d, "
                "\"step_ms\": %.2f, \"steps\": %d}\n",
                norm.c_str(), width, (long long)batch, threads, times[times.size() / 2], steps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
