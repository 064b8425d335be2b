// Times one training step of the order-embedding model (caption GRU with a
// norm, image encoder, order-violation or cosine contrastive loss, backward,
// per-parameter clipping, Adam) on a fixed random batch; the PyTorch twin is
// bench/order_embedding_torch.py (same sizes, same caption lengths
// L_b = 6 + (5b) mod 12) and bench/bench_order_embedding.sh runs both.
// Prints {"impl": "rmsgrad", "norm", "method", "threads", "batch", "hidden",
// "max_len", "ms_per_step", "ms_min"}: the median and the fastest of the
// timed steps after the warm-up steps.
//
// Usage: bench_order_embedding [--norm N] [--method order|cosine] [--threads T] [--steps S]
//                              [--warmup W] [--batch B] [--hidden H] [--vocab V]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "models/order_embedding.h"
#include "rmsgrad.h"

using namespace rg;

int main(int argc, char** argv) {
  std::string norm = "rmsnorm", method = "order";
  int64_t batch = 128, hidden = 1024, vocab = 3000, word_dim = 300, image_dim = 2048;
  int threads = 1, steps = 10, warmup = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--norm" && has_value) norm = argv[++i];
    else if (a == "--method" && has_value) method = argv[++i];
    else if (a == "--threads" && has_value) threads = std::stoi(argv[++i]);
    else if (a == "--steps" && has_value) steps = std::stoi(argv[++i]);
    else if (a == "--warmup" && has_value) warmup = std::stoi(argv[++i]);
    else if (a == "--batch" && has_value) batch = std::stoll(argv[++i]);
    else if (a == "--hidden" && has_value) hidden = std::stoll(argv[++i]);
    else if (a == "--vocab" && has_value) vocab = std::stoll(argv[++i]);
    else {
      std::fprintf(stderr,
                   "bench_order_embedding: unknown argument '%s' (usage: bench_order_embedding [--norm N] "
                   "[--method order|cosine] [--threads T] [--steps S] [--warmup W] [--batch B] [--hidden H] "
                   "[--vocab V])\n",
                   a.c_str());
      return 2;
    }
  }
  try {
    set_num_threads(threads);
    OrderEmbeddingOptions options;
    options.vocab_size = vocab;
    options.word_dim = word_dim;
    options.embed_dim = hidden;
    options.image_dim = image_dim;
    options.norm.kind = parse_norm_kind(norm);
    options.similarity = parse_similarity(method);
    Generator gen(0);
    OrderEmbeddingModel model(options, gen);
    Adam adam(model.named_parameters(), AdamOptions{.lr = 1e-3});

    // Time-major ids [T, B] and mask, caption b of length 6 + (5b) mod 12.
    const int64_t max_len = batch >= 3 ? 17 : 6 + (5 * (batch - 1)) % 12;
    std::vector<int32_t> ids(static_cast<size_t>(max_len * batch), 0);
    Tensor mask = Tensor::zeros(Shape{max_len, batch});
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < 6 + (5 * b) % 12; ++t) {
        ids[t * batch + b] = 4 + static_cast<int32_t>(gen.randint(vocab - 4));
        mask.data()[t * batch + b] = 1.0f;
      }
    const Indices words(Shape{max_len, batch}, ids);
    Tensor images = normal(Shape{batch, image_dim}, 0.0f, 1.0f, gen);

    auto step = [&] {
      Var loss = model.loss(words, mask, constant(images));
      adam.zero_grad();
      loss.backward();
      clip_grad_norm_per_parameter(model.named_parameters(), 2.0);
      adam.step();
      tape().clear();
    };
    for (int i = 0; i < warmup; ++i) step();
    std::vector<double> times;
    for (int i = 0; i < steps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      step();
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    std::printf("{\"impl\": \"rmsgrad\", \"norm\": \"%s\", \"method\": \"%s\", \"threads\": %d, \"batch\": %lld, "
                "\"hidden\": %lld, \"max_len\": %lld, \"ms_per_step\": %.3f, \"ms_min\": %.3f}\n",
                norm.c_str(), method.c_str(), threads, static_cast<long long>(batch), static_cast<long long>(hidden),
                static_cast<long long>(max_len), times[times.size() / 2], times.front());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_order_embedding: %s\n", e.what());
    return 1;
  }
}
