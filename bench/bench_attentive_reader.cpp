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
// With --against NORM2 it builds a second reader with NORM2 in the same
// process and alternates the two step by step (bench/step_timing.h), printing
// the median per-pair ratio of NORM's step to NORM2's and its 95% interval.
//
// Usage: bench_attentive_reader [--norm none|layernorm|rmsnorm|prmsnorm|batchnorm] [--threads T]
//                               [--steps S] [--warmup W] [--doc-len Td] [--batch B]
//                               [--against N2] [--pairs P]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/step_timing.h"
#include "models/attentive_reader.h"
#include "rmsgrad.h"

using namespace rg;

namespace {

struct Sizes {
  int64_t batch = 64, doc_len = 300, vocab = 10000, embed = 240, hidden = 240, candidates = 10;
};

// The fixed batch, drawn from generator 0 after the model's parameters, as
// attentive_reader_torch.py draws its own.
struct Batch {
  std::vector<int32_t> doc_ids, query_ids, candidate_ids, answer_ids;
  Tensor doc_mask, query_mask, candidate_padding;
  int64_t td = 0, tq = 0;
};

Batch make_batch(const Sizes& z, Generator& gen) {
  Batch b;
  const int64_t min_doc = (5 * z.doc_len + 5) / 6;
  std::vector<int64_t> doc_lengths(z.batch), query_lengths(z.batch);
  for (int64_t i = 0; i < z.batch; ++i) {
    doc_lengths[i] = min_doc + (7 * i) % (z.doc_len - min_doc + 1);
    query_lengths[i] = 12 + (5 * i) % 9;
  }
  b.td = *std::max_element(doc_lengths.begin(), doc_lengths.end());
  b.tq = *std::max_element(query_lengths.begin(), query_lengths.end());
  auto tokens = [&](int64_t steps, const std::vector<int64_t>& lengths, std::vector<int32_t>& ids, Tensor& mask) {
    ids.assign(static_cast<size_t>(steps * z.batch), 0);
    mask = Tensor::zeros(Shape{steps, z.batch});
    for (int64_t i = 0; i < z.batch; ++i)
      for (int64_t t = 0; t < lengths[i]; ++t) {
        ids[t * z.batch + i] = 4 + static_cast<int32_t>(gen.randint(z.vocab - 4));
        mask.data()[t * z.batch + i] = 1.0f;
      }
  };
  tokens(b.td, doc_lengths, b.doc_ids, b.doc_mask);
  tokens(b.tq, query_lengths, b.query_ids, b.query_mask);
  b.candidate_ids.resize(static_cast<size_t>(z.batch * z.candidates));
  for (auto& id : b.candidate_ids) id = 4 + static_cast<int32_t>(gen.randint(z.vocab - 4));
  for (int64_t i = 0; i < z.batch; ++i) b.answer_ids.push_back(static_cast<int32_t>(i % z.candidates));
  b.candidate_padding = Tensor::zeros(Shape{z.batch, z.candidates});
  return b;
}

// A reader with `norm`, its optimizer and the fixed batch.
struct Trainer {
  Generator gen{0}, noise_gen{1};
  std::unique_ptr<AttentiveReader> model;
  std::unique_ptr<Adam> adam;
  Batch batch;
  Indices document, query, candidates, answers;
  double loss_value = 0.0;

  Trainer(const std::string& norm, const Sizes& z) {
    AttentiveReaderOptions options;
    options.vocab_size = z.vocab;
    options.embed_dim = z.embed;
    options.hidden = z.hidden;
    options.norm.kind = parse_norm_kind(norm);
    options.dropout = 0.5f;
    model = std::make_unique<AttentiveReader>(options, gen, noise_gen);
    model->train();
    adam = std::make_unique<Adam>(model->named_parameters(), AdamOptions{.lr = 8e-5});
    batch = make_batch(z, gen);
    document = Indices(Shape{batch.td, z.batch}, batch.doc_ids);
    query = Indices(Shape{batch.tq, z.batch}, batch.query_ids);
    candidates = Indices(Shape{z.batch, z.candidates}, batch.candidate_ids);
    answers = Indices(Shape{z.batch}, batch.answer_ids);
  }

  void step() {
    const ReaderInputs in{document, batch.doc_mask, query, batch.query_mask, candidates, batch.candidate_padding};
    Var loss = model->loss(in, answers);
    adam->zero_grad();
    loss.backward();
    clip_grad_norm(model->named_parameters(), 10.0);
    adam->step();
    loss_value = loss.item();
    tape().clear();
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string norm = "rmsnorm", against;
  Sizes z;
  int threads = 1, steps = 5, warmup = 2, pairs = 40;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--norm" && has_value) norm = argv[++i];
    else if (a == "--threads" && has_value) threads = std::stoi(argv[++i]);
    else if (a == "--steps" && has_value) steps = std::stoi(argv[++i]);
    else if (a == "--warmup" && has_value) warmup = std::stoi(argv[++i]);
    else if (a == "--doc-len" && has_value) z.doc_len = std::stoll(argv[++i]);
    else if (a == "--batch" && has_value) z.batch = std::stoll(argv[++i]);
    else if (a == "--against" && has_value) against = argv[++i];
    else if (a == "--pairs" && has_value) pairs = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "bench_attentive_reader: unknown argument '%s' (usage: bench_attentive_reader [--norm N] "
                   "[--threads T] [--steps S] [--warmup W] [--doc-len Td] [--batch B] [--against N2] "
                   "[--pairs P])\n",
                   a.c_str());
      return 2;
    }
  }
  try {
    check(z.batch > 0 && z.doc_len > 0 && steps > 0 && pairs > 0 && warmup >= 0 && threads > 0,
          "bench_attentive_reader: batch, doc-len, steps, pairs and threads must be positive, warmup non-negative");
    set_num_threads(threads);
    auto trainer = std::make_shared<Trainer>(norm, z);
    const Batch& batch = trainer->batch;
    if (!against.empty()) {
      auto other = std::make_shared<Trainer>(against, z);
      const bench::PairedTimes times =
          bench::time_pairs([trainer] { trainer->step(); }, [other] { other->step(); }, warmup, pairs);
      check(std::isfinite(trainer->loss_value) && std::isfinite(other->loss_value),
            "bench_attentive_reader: loss is {} / {}", trainer->loss_value, other->loss_value);
      bench::print_pair_line(fmt::format("\"model\": \"attentive_reader\", \"threads\": {}, \"batch\": {}, "
                                         "\"doc_len\": {}, \"hidden\": {}, ",
                                         threads, z.batch, batch.td, z.hidden),
                             norm, against, times);
      return 0;
    }
    const std::vector<double> times = bench::time_steps([trainer] { trainer->step(); }, warmup, steps);
    check(std::isfinite(trainer->loss_value), "bench_attentive_reader: loss is {}", trainer->loss_value);
    std::printf("{\"impl\": \"rmsgrad\", \"norm\": \"%s\", \"threads\": %d, \"batch\": %lld, \"doc_len\": %lld, "
                "\"query_len\": %lld, \"candidates\": %lld, \"vocab\": %lld, \"embed\": %lld, \"hidden\": %lld, "
                "\"parameters\": %lld, \"ms_per_step\": %.3f, \"ms_min\": %.3f}\n",
                norm.c_str(), threads, static_cast<long long>(z.batch), static_cast<long long>(batch.td),
                static_cast<long long>(batch.tq), static_cast<long long>(z.candidates),
                static_cast<long long>(z.vocab), static_cast<long long>(z.embed), static_cast<long long>(z.hidden),
                static_cast<long long>(trainer->model->parameter_count()), times[times.size() / 2], times.front());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_attentive_reader: %s\n", e.what());
    return 1;
  }
}
