// Times one training step of ConvPool-CNN-C (forward with input noise and
// dropout, cross-entropy, backward, Adam) on random images; the PyTorch twin
// is bench/convpool_torch.py and bench/bench_convpool.sh runs both. Prints
// {"impl": "rmsgrad", "norm", "width", "batch", "threads", "step_ms", "steps"}
// with the median step time after two warm-up steps.
//
// With --against NORM2 it builds a second model with NORM2 in the same
// process and alternates the two step by step (bench/step_timing.h), printing
// the median per-pair ratio of NORM's step to NORM2's and its 95% interval.
//
// Usage: bench_convpool [--norm N] [--width W] [--batch B] [--threads T] [--steps S]
//                       [--against N2] [--pairs P]
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/step_timing.h"
#include "models/convpool_cnn.h"
#include "rmsgrad.h"

using namespace rg;

namespace {

// A model, its optimizer and a fixed batch; every model starts from the same
// seeds, so two norms see the same images and labels.
bench::Step make_step(const std::string& norm, double width, int64_t batch) {
  struct State {
    Generator init{1}, noise{2}, data{3};
    std::unique_ptr<ConvPoolCnnC> model;
    std::unique_ptr<Adam> adam;
    Tensor images;
    std::vector<int32_t> labels;
  };
  auto s = std::make_shared<State>();
  ConvPoolCnnOptions options;
  options.norm.kind = parse_norm_kind(norm);
  options.norm.p = 0.125f;
  options.norm.eps = 1e-6f;
  options.width = width;
  s->model = std::make_unique<ConvPoolCnnC>(options, s->init, s->noise);
  s->adam = std::make_unique<Adam>(s->model->named_parameters(),
                                   AdamOptions{.lr = options.norm.kind == NormKind::None ? 3e-4 : 3e-3});
  s->images = normal(Shape{batch, 3, 32, 32}, 0.0f, 1.0f, s->data);
  for (int64_t i = 0; i < batch; ++i) s->labels.push_back(static_cast<int32_t>(s->data.randint(10)));
  if (options.norm.kind == NormKind::WeightNorm) s->model->init_weight_norm(s->images);
  return [s] {
    Var loss = cross_entropy((*s->model)(constant(s->images)), Indices(s->labels));
    s->adam->zero_grad();
    loss.backward();
    s->adam->step();
    tape().clear();
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::string norm = "layernorm", against;
  double width = 0.5;
  int64_t batch = 100;
  int threads = 1, steps = 10, pairs = 40;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--norm" && i + 1 < argc) norm = argv[++i];
    else if (a == "--width" && i + 1 < argc) width = std::stod(argv[++i]);
    else if (a == "--batch" && i + 1 < argc) batch = std::stoll(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (a == "--steps" && i + 1 < argc) steps = std::stoi(argv[++i]);
    else if (a == "--against" && i + 1 < argc) against = argv[++i];
    else if (a == "--pairs" && i + 1 < argc) pairs = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "bench_convpool: unknown argument '%s' (usage: bench_convpool [--norm N] [--width W] "
                           "[--batch B] [--threads T] [--steps S] [--against N2] [--pairs P])\n", a.c_str());
      return 2;
    }
  }
  try {
    check(batch > 0 && steps > 0 && pairs > 0 && threads > 0,
          "bench_convpool: batch, steps, pairs and threads must be positive");
    set_num_threads(threads);
    const std::string fields = fmt::format("\"model\": \"convpool\", \"width\": {}, \"batch\": {}, \"threads\": {}, ",
                                           width, batch, threads);
    if (!against.empty()) {
      const bench::Step a = make_step(norm, width, batch), b = make_step(against, width, batch);
      bench::print_pair_line(fields, norm, against, bench::time_pairs(a, b, 2, pairs));
      return 0;
    }
    const std::vector<double> times = bench::time_steps(make_step(norm, width, batch), 2, steps);
    std::printf("{\"impl\": \"rmsgrad\", \"norm\": \"%s\", \"width\": %g, \"batch\": %lld, \"threads\": %d, "
                "\"step_ms\": %.2f, \"steps\": %d}\n",
                norm.c_str(), width, (long long)batch, threads, times[times.size() / 2], steps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_convpool: %s\n", e.what());
    return 1;
  }
  return 0;
}
