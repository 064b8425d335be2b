// Times one training step of the order-embedding model (caption GRU with a
// norm, image encoder, order-violation or cosine contrastive loss, backward,
// per-parameter clipping, Adam) on a fixed random batch; the PyTorch twin is
// bench/order_embedding_torch.py (same sizes, same caption lengths
// L_b = 6 + (5b) mod 12) and bench/bench_order_embedding.sh runs both.
// Prints {"impl": "rmsgrad", "norm", "method", "threads", "batch", "hidden",
// "max_len", "ms_per_step", "ms_min"}: the median and the fastest of the
// timed steps after the warm-up steps.
//
// With --against NORM2 it builds a second model with NORM2 in the same
// process and alternates the two step by step (bench/step_timing.h), printing
// the median per-pair ratio of NORM's step to NORM2's and its 95% interval.
//
// Usage: bench_order_embedding [--norm N] [--method order|cosine] [--threads T] [--steps S]
//                              [--warmup W] [--batch B] [--hidden H] [--vocab V] [--against N2] [--pairs P]
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/step_timing.h"
#include "models/order_embedding.h"
#include "rmsgrad.h"

using namespace rg;

namespace {

struct Sizes {
  int64_t batch = 128, hidden = 1024, vocab = 3000, word_dim = 300, image_dim = 2048;
};

int64_t longest_caption(int64_t batch) { return batch >= 3 ? 17 : 6 + (5 * (batch - 1)) % 12; }

// A model with `norm`, its optimizer and a fixed batch drawn from generator 0
// after the parameters: time-major ids [T, B] and mask, caption b of length
// 6 + (5b) mod 12, and random image features.
bench::Step make_step(const std::string& norm, const std::string& method, const Sizes& z) {
  struct State {
    Generator gen{0};
    std::unique_ptr<OrderEmbeddingModel> model;
    std::unique_ptr<Adam> adam;
    Indices words;
    Tensor mask, images;
  };
  auto s = std::make_shared<State>();
  OrderEmbeddingOptions options;
  options.vocab_size = z.vocab;
  options.word_dim = z.word_dim;
  options.embed_dim = z.hidden;
  options.image_dim = z.image_dim;
  options.norm.kind = parse_norm_kind(norm);
  options.similarity = parse_similarity(method);
  s->model = std::make_unique<OrderEmbeddingModel>(options, s->gen);
  s->adam = std::make_unique<Adam>(s->model->named_parameters(), AdamOptions{.lr = 1e-3});
  const int64_t max_len = longest_caption(z.batch);
  std::vector<int32_t> ids(static_cast<size_t>(max_len * z.batch), 0);
  s->mask = Tensor::zeros(Shape{max_len, z.batch});
  for (int64_t b = 0; b < z.batch; ++b)
    for (int64_t t = 0; t < 6 + (5 * b) % 12; ++t) {
      ids[t * z.batch + b] = 4 + static_cast<int32_t>(s->gen.randint(z.vocab - 4));
      s->mask.data()[t * z.batch + b] = 1.0f;
    }
  s->words = Indices(Shape{max_len, z.batch}, ids);
  s->images = normal(Shape{z.batch, z.image_dim}, 0.0f, 1.0f, s->gen);
  return [s] {
    Var loss = s->model->loss(s->words, s->mask, constant(s->images));
    s->adam->zero_grad();
    loss.backward();
    clip_grad_norm_per_parameter(s->model->named_parameters(), 2.0);
    s->adam->step();
    tape().clear();
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::string norm = "rmsnorm", method = "order", against;
  Sizes z;
  int threads = 1, steps = 10, warmup = 2, pairs = 40;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--norm" && has_value) norm = argv[++i];
    else if (a == "--method" && has_value) method = argv[++i];
    else if (a == "--threads" && has_value) threads = std::stoi(argv[++i]);
    else if (a == "--steps" && has_value) steps = std::stoi(argv[++i]);
    else if (a == "--warmup" && has_value) warmup = std::stoi(argv[++i]);
    else if (a == "--batch" && has_value) z.batch = std::stoll(argv[++i]);
    else if (a == "--hidden" && has_value) z.hidden = std::stoll(argv[++i]);
    else if (a == "--vocab" && has_value) z.vocab = std::stoll(argv[++i]);
    else if (a == "--against" && has_value) against = argv[++i];
    else if (a == "--pairs" && has_value) pairs = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "bench_order_embedding: unknown argument '%s' (usage: bench_order_embedding [--norm N] "
                   "[--method order|cosine] [--threads T] [--steps S] [--warmup W] [--batch B] [--hidden H] "
                   "[--vocab V] [--against N2] [--pairs P])\n",
                   a.c_str());
      return 2;
    }
  }
  try {
    check(z.batch > 0 && z.hidden > 0 && z.vocab > 4 && steps > 0 && pairs > 0 && warmup >= 0 && threads > 0,
          "bench_order_embedding: sizes, steps, pairs and threads must be positive (vocab > 4), warmup non-negative");
    set_num_threads(threads);
    const bench::Step step = make_step(norm, method, z);
    if (!against.empty()) {
      bench::print_pair_line(fmt::format("\"model\": \"order_embedding\", \"method\": \"{}\", \"threads\": {}, "
                                         "\"batch\": {}, \"hidden\": {}, ",
                                         method, threads, z.batch, z.hidden),
                             norm, against, bench::time_pairs(step, make_step(against, method, z), warmup, pairs));
      return 0;
    }
    const std::vector<double> times = bench::time_steps(step, warmup, steps);
    std::printf("{\"impl\": \"rmsgrad\", \"norm\": \"%s\", \"method\": \"%s\", \"threads\": %d, \"batch\": %lld, "
                "\"hidden\": %lld, \"max_len\": %lld, \"ms_per_step\": %.3f, \"ms_min\": %.3f}\n",
                norm.c_str(), method.c_str(), threads, static_cast<long long>(z.batch),
                static_cast<long long>(z.hidden), static_cast<long long>(longest_caption(z.batch)),
                times[times.size() / 2], times.front());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_order_embedding: %s\n", e.what());
    return 1;
  }
}
