// Times one training step of RNNSearch (Bahdanau et al. 2015, as Nematus
// builds it; models/rnnsearch.h: BiGRU encoder, conditional-GRU decoder with
// MLP attention, deep output, label-smoothed cross-entropy, backward,
// global-norm clipping to 1, Adam) on a fixed random batch shaped like the
// paper's Multi30k recipe; the PyTorch twin is bench/rnnsearch_torch.py
// (same sizes, same lengths) and bench/bench_rnnsearch.sh runs both.
//
// The batch (time-major, as the model takes it): B sentence pairs; with L the
// --src-len (or --tgt-len) and Lmin = max(1, L − 9), source b has length
// Lmin + (7b) mod (L − Lmin + 1) and target b Lmin + (3b) mod (L − Lmin + 1)
// (13–22 subwords for L = 22); ids uniform in [4, V), the last real token
// </s> (3); the padded tail is masked out.
//
// Prints {"impl": "rmsgrad", "norm", "threads", "batch", "src_len",
// "tgt_len", "vocab", "embed", "hidden", "parameters", "ms_per_step",
// "ms_min"}: the median and the fastest of the timed steps after the warm-up.
//
// With --against NORM2 it builds a second model with NORM2 in the same
// process and alternates the two step by step (bench/step_timing.h), printing
// the median per-pair ratio of NORM's step to NORM2's and its 95% interval.
//
// --dump DIR instead checks the model against the twin: with dropout 0 it
// writes the initial parameters (DIR/params/<name>.npy), one batch
// (DIR/{source,source_mask,target,target_mask}.npy, ids as float32), the
// gradients of one backward (DIR/grads/<name>.npy), the sizes
// (DIR/config.json) and the loss and global gradient norm (DIR/result.json);
// `rnnsearch_torch.py --check DIR` recomputes them in float64.
//
// Usage: bench_rnnsearch [--norm none|layernorm|rmsnorm|prmsnorm|l2norm] [--threads T] [--steps S]
//                        [--warmup W] [--batch B] [--src-len S] [--tgt-len T] [--vocab V] [--embed E]
//                        [--hidden H] [--dropout P] [--p P] [--label-smoothing E] [--dump DIR]
//                        [--against N2] [--pairs P]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/step_timing.h"
#include "experiments/common/npy.h"
#include "models/rnnsearch.h"
#include "rmsgrad.h"

using namespace rg;

namespace {

constexpr int32_t kEos = 3;

// Sentence b's length: Lmin + (stride·b) mod (L − Lmin + 1), Lmin = max(1, L − 9).
std::vector<int64_t> sentence_lengths(int64_t max_len, int64_t batch, int64_t stride) {
  const int64_t low = std::max<int64_t>(1, max_len - 9);
  std::vector<int64_t> lengths(batch);
  for (int64_t b = 0; b < batch; ++b) lengths[b] = low + (stride * b) % (max_len - low + 1);
  return lengths;
}

struct Sentences {
  Indices ids;  // [L, B]
  Tensor mask;  // [L, B]
};

Sentences random_sentences(const std::vector<int64_t>& lengths, int64_t vocab, Generator& gen) {
  const int64_t batch = static_cast<int64_t>(lengths.size());
  const int64_t steps = *std::max_element(lengths.begin(), lengths.end());
  std::vector<int32_t> ids(static_cast<size_t>(steps * batch), 0);
  Tensor mask = Tensor::zeros(Shape{steps, batch});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < lengths[b]; ++t) {
      ids[t * batch + b] = t + 1 == lengths[b] ? kEos : 4 + static_cast<int32_t>(gen.randint(vocab - 4));
      mask.data()[t * batch + b] = 1.0f;
    }
  return {Indices(Shape{steps, batch}, std::move(ids)), mask};
}

void write_ids(const std::string& path, const Sentences& s) {
  Tensor t = Tensor::empty(s.mask.shape());
  for (size_t i = 0; i < s.ids.values.size(); ++i) t.data()[i] = static_cast<float>(s.ids.values[i]);
  write_npy(path, t);
}

void write_text(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "bench_rnnsearch: cannot write {}", path);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

struct Sizes {
  int64_t batch = 80, src_len = 22, tgt_len = 22, vocab = 8000, embed = 256, hidden = 256;
  float dropout = 0.2f, p = 0.0625f, label_smoothing = 0.1f;
};

RNNSearchOptions model_options(const std::string& norm, const Sizes& z) {
  RNNSearchOptions options;
  options.source_vocab = options.target_vocab = z.vocab;
  options.embed = z.embed;
  options.hidden = z.hidden;
  options.norm.kind = parse_norm_kind(norm);
  options.norm.p = z.p;
  options.dropout = z.dropout;
  options.label_smoothing = z.label_smoothing;
  return options;
}

// A model with `norm`, its optimizer and the fixed batch, drawn from generator
// 0 after the parameters; lengths as in rnnsearch_torch.py.
struct Trainer {
  Generator gen{0}, noise_gen{1};
  std::unique_ptr<RNNSearch> model;
  std::unique_ptr<Adam> adam;
  Sentences source, target;
  double loss_value = 0.0;

  Trainer(const std::string& norm, const Sizes& z) {
    model = std::make_unique<RNNSearch>(model_options(norm, z), gen, noise_gen);
    model->train();
    source = random_sentences(sentence_lengths(z.src_len, z.batch, 7), z.vocab, gen);
    target = random_sentences(sentence_lengths(z.tgt_len, z.batch, 3), z.vocab, gen);
    adam = std::make_unique<Adam>(model->named_parameters(), AdamOptions{.lr = 1e-4});
  }

  void step() {
    Var loss = model->loss(source.ids, source.mask, target.ids, target.mask);
    adam->zero_grad();
    loss.backward();
    clip_grad_norm(model->named_parameters(), 1.0);
    adam->step();
    loss_value = loss.item();
    tape().clear();
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string norm = "rmsnorm", dump, against;
  Sizes z;
  int threads = 1, steps = 5, warmup = 2, pairs = 40;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--norm" && has_value) norm = argv[++i];
    else if (a == "--threads" && has_value) threads = std::stoi(argv[++i]);
    else if (a == "--steps" && has_value) steps = std::stoi(argv[++i]);
    else if (a == "--warmup" && has_value) warmup = std::stoi(argv[++i]);
    else if (a == "--batch" && has_value) z.batch = std::stoll(argv[++i]);
    else if (a == "--src-len" && has_value) z.src_len = std::stoll(argv[++i]);
    else if (a == "--tgt-len" && has_value) z.tgt_len = std::stoll(argv[++i]);
    else if (a == "--vocab" && has_value) z.vocab = std::stoll(argv[++i]);
    else if (a == "--embed" && has_value) z.embed = std::stoll(argv[++i]);
    else if (a == "--hidden" && has_value) z.hidden = std::stoll(argv[++i]);
    else if (a == "--dropout" && has_value) z.dropout = std::stof(argv[++i]);
    else if (a == "--p" && has_value) z.p = std::stof(argv[++i]);
    else if (a == "--label-smoothing" && has_value) z.label_smoothing = std::stof(argv[++i]);
    else if (a == "--dump" && has_value) dump = argv[++i];
    else if (a == "--against" && has_value) against = argv[++i];
    else if (a == "--pairs" && has_value) pairs = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "bench_rnnsearch: unknown argument '%s' (usage: bench_rnnsearch [--norm N] [--threads T] "
                   "[--steps S] [--warmup W] [--batch B] [--src-len S] [--tgt-len T] [--vocab V] [--embed E] "
                   "[--hidden H] [--dropout P] [--p P] [--label-smoothing E] [--dump DIR] [--against N2] "
                   "[--pairs P])\n",
                   a.c_str());
      return 2;
    }
  }
  try {
    check(z.batch > 0 && z.src_len > 0 && z.tgt_len > 0 && z.vocab > 4 && z.embed > 0 && z.hidden > 0 &&
              steps > 0 && pairs > 0 && warmup >= 0 && threads > 0,
          "bench_rnnsearch: sizes, steps, pairs and threads must be positive (vocab > 4), warmup non-negative");
    set_num_threads(threads);

    if (!dump.empty()) {
      namespace fs = std::filesystem;
      z.dropout = 0.0f;
      Trainer trainer(norm, z);
      RNNSearch& model = *trainer.model;
      const Sentences& source = trainer.source;
      const Sentences& target = trainer.target;
      fs::create_directories(fs::path(dump) / "params");
      fs::create_directories(fs::path(dump) / "grads");
      for (const auto& [name, param] : model.named_parameters())
        write_npy((fs::path(dump) / "params" / (name + ".npy")).string(), param.value());
      write_ids((fs::path(dump) / "source.npy").string(), source);
      write_ids((fs::path(dump) / "target.npy").string(), target);
      write_npy((fs::path(dump) / "source_mask.npy").string(), source.mask);
      write_npy((fs::path(dump) / "target_mask.npy").string(), target.mask);
      Var loss = model.loss(source.ids, source.mask, target.ids, target.mask);
      model.zero_grad();
      loss.backward();
      const double norm_before = grad_norm(model.named_parameters());
      for (auto& [name, param] : model.named_parameters())
        write_npy((fs::path(dump) / "grads" / (name + ".npy")).string(), param.grad());
      write_text((fs::path(dump) / "config.json").string(),
                 fmt::format("{{\"norm\": \"{}\", \"vocab\": {}, \"embed\": {}, \"hidden\": {}, \"p\": {}, "
                             "\"label_smoothing\": {}}}\n",
                             norm, z.vocab, z.embed, z.hidden, z.p, z.label_smoothing));
      write_text((fs::path(dump) / "result.json").string(),
                 fmt::format("{{\"loss\": {:.9g}, \"grad_norm\": {:.9g}, \"parameters\": {}}}\n", loss.item(),
                             norm_before, model.parameter_count()));
      std::printf("bench_rnnsearch: wrote %s (norm %s, loss %.6f, gradient norm %.6f)\n", dump.c_str(),
                  norm.c_str(), loss.item(), norm_before);
      tape().clear();
      return 0;
    }

    auto trainer = std::make_shared<Trainer>(norm, z);
    const int64_t src_steps = trainer->source.mask.dim(0), tgt_steps = trainer->target.mask.dim(0);
    if (!against.empty()) {
      auto other = std::make_shared<Trainer>(against, z);
      const bench::PairedTimes times =
          bench::time_pairs([trainer] { trainer->step(); }, [other] { other->step(); }, warmup, pairs);
      check(std::isfinite(trainer->loss_value) && std::isfinite(other->loss_value),
            "bench_rnnsearch: loss is {} / {}", trainer->loss_value, other->loss_value);
      bench::print_pair_line(fmt::format("\"model\": \"rnnsearch\", \"threads\": {}, \"batch\": {}, "
                                         "\"src_len\": {}, \"tgt_len\": {}, \"hidden\": {}, ",
                                         threads, z.batch, src_steps, tgt_steps, z.hidden),
                             norm, against, times);
      return 0;
    }
    const std::vector<double> times = bench::time_steps([trainer] { trainer->step(); }, warmup, steps);
    check(std::isfinite(trainer->loss_value), "bench_rnnsearch: loss is {}", trainer->loss_value);
    std::printf("{\"impl\": \"rmsgrad\", \"norm\": \"%s\", \"threads\": %d, \"batch\": %lld, \"src_len\": %lld, "
                "\"tgt_len\": %lld, \"vocab\": %lld, \"embed\": %lld, \"hidden\": %lld, \"parameters\": %lld, "
                "\"ms_per_step\": %.3f, \"ms_min\": %.3f}\n",
                norm.c_str(), threads, static_cast<long long>(z.batch), static_cast<long long>(src_steps),
                static_cast<long long>(tgt_steps), static_cast<long long>(z.vocab), static_cast<long long>(z.embed),
                static_cast<long long>(z.hidden), static_cast<long long>(trainer->model->parameter_count()),
                times[times.size() / 2], times.front());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_rnnsearch: %s\n", e.what());
    return 1;
  }
}
