// Times one training step of the bidirectional attentive reader (Hermann et
// al. 2015; models/attentive_reader.h: BiLSTM over the document, forward and
// backward LSTMs over the query, MLP attention, g = tanh(Linear([r; u])),
// dropout, candidate scores, cross-entropy, backward, global-norm clipping
// to 10, Adam) on a fixed random batch shaped like the paper's recipe; the
// PyTorch twin is bench/attentive_reader_torch.py (same sizes, same lengths)
// and bench/bench_attentive_reader.sh runs both.
//
// The batch (time-major, as the model takes it): B questions, document b of
// length Ld_b = Lmin + (7b) mod (Td − Lmin + 1) with Lmin = ⌈5·Td/6⌉ (250–300
// for --doc-len 300), query b of length Lq_b = 12 + (5b) mod 9 (12–20),
// K = 10 candidates per question (no padding slots), answer b mod K; token
// ids uniform in [4, V). The padded tail of every sequence is masked out.
//
// Prints {"impl": "rmsgrad", "norm", "threads", "batch", "doc_len",
// "query_len", "candidates", "vocab", "embed", "hidden", "parameters",
// "ms_per_step", "ms_min"}: the median and the fastest of the timed steps
// after the warm-up steps.
//
// Usage: bench_attentive_reader [--norm none|layernorm|rmsnorm|prmsnorm|batchnorm] [--threads T]
//                               [--steps S] [--warmup W] [--doc-len Td] [--batch B]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "models/attentive_reader.h"
#include "rmsgrad.h"

using namespace rg;

int main(int argc, char** argv) {
  std::string norm = "rmsnorm";
  int64_t batch = 64, doc_len = 300, vocab = 10000, embed = 240, hidden = 240, candidates = 10;
  int threads = 1, steps = 5, warmup = 2;
  const float dropout = 0.5f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--norm" && has_value) norm = argv[++i];
    else if (a == "--threads" && has_value) threads = std::stoi(argv[++i]);
    else if (a == "--steps" && has_value) steps = std::stoi(argv[++i]);
    else if (a == "--warmup" && has_value) warmup = std::stoi(argv[++i]);
    else if (a == "--doc-len" && has_value) doc_len = std::stoll(argv[++i]);
    else if (a == "--batch" && has_value) batch = std::stoll(argv[++i]);
    else {
      std::fprintf(stderr,
                   "bench_attentive_reader: unknown argument '%s' (usage: bench_attentive_reader [--norm N] "
                   "[--threads T] [--steps S] [--warmup W] [--doc-len Td] [--batch B])\n",
                   a.c_str());
      return 2;
    }
  }
  try {
    check(batch > 0 && doc_len > 0 && steps > 0 && warmup >= 0 && threads > 0,
          "bench_attentive_reader: batch, doc-len, steps and threads must be positive, warmup non-negative");
    set_num_threads(threads);
    AttentiveReaderOptions options;
    options.vocab_size = vocab;
    options.embed_dim = embed;
    options.hidden = hidden;
    options.norm.kind = parse_norm_kind(norm);
    options.dropout = dropout;
    Generator gen(0), noise_gen(1);
    AttentiveReader model(options, gen, noise_gen);
    model.train();
    Adam adam(model.named_parameters(), AdamOptions{.lr = 8e-5});

    // Lengths as in attentive_reader_torch.py.
    const int64_t min_doc = (5 * doc_len + 5) / 6;
    std::vector<int64_t> doc_lengths(batch), query_lengths(batch);
    for (int64_t b = 0; b < batch; ++b) {
      doc_lengths[b] = min_doc + (7 * b) % (doc_len - min_doc + 1);
      query_lengths[b] = 12 + (5 * b) % 9;
    }
    const int64_t td = *std::max_element(doc_lengths.begin(), doc_lengths.end());
    const int64_t tq = *std::max_element(query_lengths.begin(), query_lengths.end());
    auto tokens = [&](int64_t steps_, const std::vector<int64_t>& lengths, std::vector<int32_t>& ids, Tensor& mask) {
      ids.assign(static_cast<size_t>(steps_ * batch), 0);
      mask = Tensor::zeros(Shape{steps_, batch});
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < lengths[b]; ++t) {
          ids[t * batch + b] = 4 + static_cast<int32_t>(gen.randint(vocab - 4));
          mask.data()[t * batch + b] = 1.0f;
        }
    };
    std::vector<int32_t> doc_ids, query_ids, candidate_ids(static_cast<size_t>(batch * candidates)), answer_ids(batch);
    Tensor doc_mask, query_mask;
    tokens(td, doc_lengths, doc_ids, doc_mask);
    tokens(tq, query_lengths, query_ids, query_mask);
    for (auto& id : candidate_ids) id = 4 + static_cast<int32_t>(gen.randint(vocab - 4));
    for (int64_t b = 0; b < batch; ++b) answer_ids[b] = static_cast<int32_t>(b % candidates);
    const Indices document(Shape{td, batch}, doc_ids), query(Shape{tq, batch}, query_ids),
        candidate_words(Shape{batch, candidates}, candidate_ids), answers(Shape{batch}, answer_ids);
    const Tensor candidate_padding = Tensor::zeros(Shape{batch, candidates});
    const ReaderInputs in{document, doc_mask, query, query_mask, candidate_words, candidate_padding};

    double loss_value = 0.0;
    auto step = [&] {
      Var loss = model.loss(in, answers);
      adam.zero_grad();
      loss.backward();
      clip_grad_norm(model.named_parameters(), 10.0);
      adam.step();
      loss_value = loss.item();
      tape().clear();
    };
    for (int i = 0; i < warmup; ++i) step();
    std::vector<double> times;
    for (int i = 0; i < steps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      step();
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    check(std::isfinite(loss_value), "bench_attentive_reader: loss is {}", loss_value);
    std::sort(times.begin(), times.end());
    std::printf("{\"impl\": \"rmsgrad\", \"norm\": \"%s\", \"threads\": %d, \"batch\": %lld, \"doc_len\": %lld, "
                "\"query_len\": %lld, \"candidates\": %lld, \"vocab\": %lld, \"embed\": %lld, \"hidden\": %lld, "
                "\"parameters\": %lld, \"ms_per_step\": %.3f, \"ms_min\": %.3f}\n",
                norm.c_str(), threads, static_cast<long long>(batch), static_cast<long long>(td),
                static_cast<long long>(tq), static_cast<long long>(candidates), static_cast<long long>(vocab),
                static_cast<long long>(embed), static_cast<long long>(hidden),
                static_cast<long long>(model.parameter_count()), times[times.size() / 2], times.front());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_attentive_reader: %s\n", e.what());
    return 1;
  }
}
