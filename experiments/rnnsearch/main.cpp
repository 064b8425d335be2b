// Machine translation with RNNSearch and a choice of normalization: the
// paper's Tables 2–3 and Figure 1.
//
//   build/bin/rnnsearch --norm rmsnorm --out runs/mt/rmsnorm          # the synthetic task
//   build/bin/rnnsearch --norm rmsnorm --out runs/mt/rmsnorm
//       --train-src train.de.gz --train-tgt train.en.gz --valid-src val.de.gz --valid-tgt val.en.gz
//       --test-src test_2016_flickr.de.gz --test-tgt test_2016_flickr.en.gz
//   build/bin/rnnsearch --translate input.de --out runs/mt/rmsnorm [--output hyp.en] [--beam 5]
//
// Training: a joint SentencePiece BPE model of --vocab-size pieces is trained
// on the training text (both languages) into <out>/subword.model; pairs
// longer than --max-length subwords are dropped; batches of up to --batch
// sentences are bucketed by length. Every --eval-every steps (and at the last
// step) the validation set is scored — per-token cross-entropy, and BLEU of
// its beam-search translations (sacreBLEU's default, on detokenised text;
// hypotheses in <out>/hypotheses/) — and <out>/checkpoint.safetensors is
// written (--resume continues from it); the checkpoint with the best
// validation BLEU is kept as <out>/best.safetensors. At the end the best
// checkpoint translates the test set, whose BLEU is logged with its signature.
//
// Translating (--translate FILE): the model settings come from <out>/config.json,
// the weights from <out>/best.safetensors, the subwords from <out>/subword.model;
// one detokenised translation per input line, to --output or stdout.
//
// Recipe (../shared/PAPER.md): Adam lr 1e-4, batch 80, clip 1.0, label
// smoothing 0.1, N(0, 0.01) init, beam 5. Sizes default to a CPU-sized model
// (embed and hidden 256); the paper's are --embed 512 --hidden 1024.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "core/error.h"
#include "core/parallel.h"
#include "experiments/common/bleu.h"
#include "experiments/common/checkpoint.h"
#include "experiments/common/norm_flags.h"
#include "experiments/common/run.h"
#include "experiments/common/text_file.h"
#include "experiments/common/training_loop.h"
#include "experiments/rnnsearch/beam_search.h"
#include "experiments/rnnsearch/synthetic_translation.h"
#include "experiments/rnnsearch/translation_data.h"
#include "models/rnnsearch.h"
#include "optim/adam.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

struct TranslationConfig {
  std::string train_src, train_tgt, valid_src, valid_tgt, test_src, test_tgt;
  std::string translate, output;
  int64_t vocab_size = 8000, max_length = 80;
  int64_t synthetic_pairs = 20000;
  int synthetic_max_words = 25;
  NormFlags norm;
  int64_t embed = 256, hidden = 256, attention = 0;
  float dropout = 0.2f, label_smoothing = 0.1f;
  double lr = 1e-4;
  int64_t batch = 80, max_tokens = 0;
  TrainingOptions loop{.steps = 10000, .eval_every = 1000, .clip = 1.0, .best_metric = "BLEU"};
  int beam = 5, valid_beam = 5;
  float length_norm = 1.0f;
  int64_t valid_limit = 0, decode_batch = 40;
};

void add_model_flags(CLI::App& app, TranslationConfig& cfg) {
  add_norm_flags(app, cfg.norm, {"none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "weightnorm"},
                 "in every GRU, the attention, the initial state and the deep output");
  app.add_option("--embed", cfg.embed, "word vectors and deep output size")->check(CLI::PositiveNumber);
  app.add_option("--hidden", cfg.hidden, "GRU units (per encoder direction)")->check(CLI::PositiveNumber);
  app.add_option("--attention", cfg.attention, "attention MLP size (0: the context size, 2·hidden)")
      ->check(CLI::NonNegativeNumber);
}

RNNSearchOptions model_options(const TranslationConfig& cfg, int64_t vocab) {
  RNNSearchOptions o;
  o.source_vocab = o.target_vocab = vocab;
  o.embed = cfg.embed;
  o.hidden = cfg.hidden;
  o.attention = cfg.attention;
  o.norm = cfg.norm.options();
  o.dropout = cfg.dropout;
  o.label_smoothing = cfg.label_smoothing;
  return o;
}

std::vector<std::string> detokenized(const Subword& subword, const std::vector<std::vector<int32_t>>& ids) {
  std::vector<std::string> text;
  text.reserve(ids.size());
  for (const auto& sentence : ids) text.push_back(subword.decode(std::vector<int>(sentence.begin(), sentence.end())));
  return text;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  check(out.good(), "cannot write {}", path);
  for (const std::string& line : lines) out << line << '\n';
  check(out.good(), "writing {} failed", path);
}

// Mean cross-entropy per real target token over a set, teacher forced.
double token_loss(RNNSearch& model, const EncodedPairs& pairs, int64_t batch) {
  NoGradGuard no_grad;
  model.eval();
  double total = 0.0, tokens = 0.0;
  for (int64_t first = 0; first < static_cast<int64_t>(pairs.size()); first += batch) {
    Batch indices;
    for (int64_t i = first; i < std::min<int64_t>(first + batch, pairs.size()); ++i) indices.push_back(i);
    TranslationBatch b = make_translation_batch(pairs, indices);
    Var logits = model.logits(b.source.ids, b.source.mask, b.target.ids, b.target.mask);
    double n = 0.0;
    for (int64_t len : b.target.lengths) n += static_cast<double>(len);
    total += RNNSearch::token_cross_entropy(logits, b.target.ids, b.target.mask).item() * n;
    tokens += n;
  }
  model.train();
  return tokens > 0 ? total / tokens : 0.0;
}

int translate_file(const TranslationConfig& cfg, const RunOptions& run_options) {
  const fs::path dir = run_options.out;
  std::ifstream config_file(dir / "config.json");
  check(config_file.good(), "--translate: {} has no config.json (is --out the training run's directory?)",
        dir.string());
  nlohmann::json saved;
  try {
    saved = nlohmann::json::parse(config_file);
  } catch (const std::exception& e) {
    throw Error(fmt::format("--translate: {} is not valid JSON: {}", (dir / "config.json").string(), e.what()));
  }
  TranslationConfig model_cfg = cfg;
  auto take = [&](const char* key, auto& value) {
    if (!saved.contains(key)) return;
    try {
      value = saved[key].get<std::remove_reference_t<decltype(value)>>();
    } catch (const nlohmann::json::exception&) {
      throw Error(fmt::format("--translate: {}: '{}' is {}, not a value of the right type",
                              (dir / "config.json").string(), key, saved[key].dump()));
    }
  };
  take("norm", model_cfg.norm.norm);
  take("norm-impl", model_cfg.norm.impl);
  take("preact-shift", model_cfg.norm.preact_shift);
  take("p", model_cfg.norm.p);
  take("eps", model_cfg.norm.eps);
  take("embed", model_cfg.embed);
  take("hidden", model_cfg.hidden);
  take("attention", model_cfg.attention);

  Subword subword((dir / "subword.model").string());
  fs::path weights = dir / "best.safetensors";
  if (!fs::exists(weights)) weights = dir / "checkpoint.safetensors";
  check(fs::exists(weights), "--translate: {} has neither best.safetensors nor checkpoint.safetensors",
        dir.string());
  Generator init_gen(0), noise_gen(1);
  RNNSearch model(model_options(model_cfg, subword.vocab_size()), init_gen, noise_gen);
  std::vector<std::pair<std::string, Tensor>> targets;
  for (auto& [name, var] : model.named_parameters()) targets.emplace_back(name, var.value());
  restore_tensors(load_checkpoint(weights.string()), "param.", targets);

  if (run_options.threads > 0) set_num_threads(run_options.threads);
  BeamOptions beam{.beam = cfg.beam, .length_norm = cfg.length_norm};
  std::vector<std::string> lines = read_lines(cfg.translate);
  std::vector<std::string> out =
      detokenized(subword, translate_all(model, encode_sentences(lines, subword), beam, cfg.decode_batch));
  if (cfg.output.empty()) {
    for (const std::string& line : out) std::cout << line << '\n';
  } else {
    write_lines(cfg.output, out);
    std::cerr << fmt::format("translated {} lines of {} into {} with {}\n", out.size(), cfg.translate, cfg.output,
                             weights.string());
  }
  return 0;
}

struct Corpus {
  ParallelText train, valid, test;
};

Corpus read_corpus(const TranslationConfig& cfg, uint64_t seed) {
  Corpus c;
  if (cfg.train_src.empty()) {
    SyntheticTranslationOptions o;
    o.pairs = cfg.synthetic_pairs;
    o.max_words = cfg.synthetic_max_words;
    o.seed = seed + 100;
    c.train = synthetic_translation(o);
    o.pairs = 500;
    o.seed = seed + 101;
    c.valid = synthetic_translation(o);
    o.seed = seed + 102;
    c.test = synthetic_translation(o);
    return c;
  }
  c.train = read_parallel_text(cfg.train_src, cfg.train_tgt);
  c.valid = read_parallel_text(cfg.valid_src, cfg.valid_tgt);
  if (!cfg.test_src.empty()) c.test = read_parallel_text(cfg.test_src, cfg.test_tgt);
  return c;
}

int train(int argc, char** argv) {
  RunOptions run_options;
  run_options.out = "runs/rnnsearch";
  TranslationConfig cfg;
  CLI::App app{"Machine translation with RNNSearch (Bahdanau et al. 2015, as Nematus; Zhang & Sennrich 2019, "
               "Tables 2-3)"};
  add_run_options(app, run_options);
  auto* train_src = app.add_option("--train-src", cfg.train_src, "training source text (plain or .gz); empty: synthetic");
  auto* train_tgt = app.add_option("--train-tgt", cfg.train_tgt, "training target text");
  auto* valid_src = app.add_option("--valid-src", cfg.valid_src, "validation source text");
  auto* valid_tgt = app.add_option("--valid-tgt", cfg.valid_tgt, "validation target text");
  auto* test_src = app.add_option("--test-src", cfg.test_src, "test source text, translated by the best checkpoint");
  auto* test_tgt = app.add_option("--test-tgt", cfg.test_tgt, "test target text");
  train_src->needs(train_tgt)->needs(valid_src);
  train_tgt->needs(train_src);
  valid_src->needs(valid_tgt)->needs(train_src);
  valid_tgt->needs(valid_src);
  test_src->needs(test_tgt)->needs(train_src);
  test_tgt->needs(test_src);
  app.add_option("--translate", cfg.translate, "translate this file with the run in --out instead of training");
  app.add_option("--output", cfg.output, "with --translate: write here instead of stdout");
  app.add_option("--vocab-size", cfg.vocab_size, "SentencePiece pieces (the synthetic task caps it at 400)")
      ->check(CLI::Range(16, 1 << 20));
  app.add_option("--max-length", cfg.max_length, "drop training pairs longer than this many subwords (0: keep all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--synthetic-pairs", cfg.synthetic_pairs, "training pairs of the synthetic task")
      ->check(CLI::Range(10, 1 << 24));
  app.add_option("--synthetic-max-words", cfg.synthetic_max_words, "longest synthetic source sentence, in words")
      ->check(CLI::Range(3, 200));
  add_model_flags(app, cfg);
  app.add_option("--dropout", cfg.dropout, "dropout on word vectors and the deep output")->check(CLI::Range(0.0f, 0.99f));
  app.add_option("--label-smoothing", cfg.label_smoothing, "label smoothing ε")->check(CLI::Range(0.0f, 0.99f));
  app.add_option("--lr", cfg.lr, "Adam learning rate")->check(CLI::PositiveNumber);
  app.add_option("--batch", cfg.batch, "sentences per step")->check(CLI::PositiveNumber);
  app.add_option("--max-tokens", cfg.max_tokens, "padded tokens per step (0: no limit)")->check(CLI::NonNegativeNumber);
  app.add_option("--clip", cfg.loop.clip, "global gradient norm clip")->check(CLI::PositiveNumber);
  app.add_option("--steps", cfg.loop.steps, "training steps")->check(CLI::PositiveNumber);
  app.add_option("--eval-every", cfg.loop.eval_every, "steps between validations")->check(CLI::PositiveNumber);
  app.add_option("--beam", cfg.beam, "beam size for the test set and --translate (1: greedy)")->check(CLI::Range(1, 100));
  app.add_option("--valid-beam", cfg.valid_beam, "beam size for validation BLEU")->check(CLI::Range(1, 100));
  app.add_option("--length-norm", cfg.length_norm, "rank finished hypotheses by score / length^this (0: off)")
      ->check(CLI::Range(0.0f, 5.0f));
  app.add_option("--valid-limit", cfg.valid_limit, "validation BLEU on the first N sentences (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--decode-batch", cfg.decode_batch, "sentences per beam-search batch")->check(CLI::PositiveNumber);
  add_stop_after_flag(app, cfg.loop);
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
  if (!cfg.translate.empty()) return translate_file(cfg, run_options);
  const bool synthetic = cfg.train_src.empty();
  if (synthetic && app.count("--vocab-size") == 0) cfg.vocab_size = 400;

  Run run(app, run_options);
  Corpus corpus = read_corpus(cfg, run_options.seed);
  run.note(fmt::format("{}: {} training, {} validation, {} test pairs", synthetic ? "synthetic task" : cfg.train_src,
                       corpus.train.size(), corpus.valid.size(), corpus.test.size()));

  const std::string subword_path = run.path("subword.model");
  if (!(run.resuming() && fs::exists(subword_path))) {
    std::vector<std::string> text = corpus.train.source;
    text.insert(text.end(), corpus.train.target.begin(), corpus.train.target.end());
    Subword::train(text, static_cast<int>(cfg.vocab_size), subword_path);
  }
  Subword subword(subword_path);
  EncodedPairs train_pairs = encode_pairs(corpus.train, subword, cfg.max_length);
  EncodedPairs valid_pairs = encode_pairs(corpus.valid, subword, 0);
  check(train_pairs.size() > 0, "rnnsearch: no training pair is left after the length filter");
  std::vector<std::vector<int32_t>> valid_sources = encode_sentences(corpus.valid.source, subword);
  if (cfg.valid_limit > 0 && static_cast<int64_t>(valid_sources.size()) > cfg.valid_limit)
    valid_sources.resize(static_cast<size_t>(cfg.valid_limit));
  std::vector<std::string> valid_refs(corpus.valid.target.begin(),
                                      corpus.valid.target.begin() + static_cast<std::ptrdiff_t>(valid_sources.size()));
  run.note(fmt::format("SentencePiece BPE, {} pieces; {} training pairs kept ({} longer than {} subwords, {} with an "
                       "empty side dropped)",
                       subword.vocab_size(), train_pairs.size(), train_pairs.dropped_long, cfg.max_length,
                       train_pairs.dropped_empty));

  Generator init_gen(run_options.seed), noise_gen(run_options.seed + 1);
  RNNSearch model(model_options(cfg, subword.vocab_size()), init_gen, noise_gen);
  run.note(fmt::format("RNNSearch, {} parameters, norm {}", model.parameter_count(), cfg.norm.norm));

  BucketOptions buckets;
  buckets.max_sentences = cfg.batch;
  buckets.max_tokens = cfg.max_tokens;
  BatchCursor cursor(translation_batches(train_pairs, buckets), run_options.seed + 3);
  Adam adam(model.named_parameters(), AdamOptions{.lr = cfg.lr});
  run.note(fmt::format("{} steps of up to {} sentences ({} per epoch); Adam lr {}; clip {}", cfg.loop.steps, cfg.batch,
                       cursor.batches_per_epoch(), cfg.lr, cfg.loop.clip));
  fs::create_directories(run.path("hypotheses"));

  // Beam-search translations of `sources`, detokenised, kept in hypotheses/<file>.
  auto translations = [&](const std::vector<std::vector<int32_t>>& sources, int beam, const std::string& file) {
    BeamOptions options{.beam = beam, .length_norm = cfg.length_norm};
    std::vector<std::string> hyps = detokenized(subword, translate_all(model, sources, options, cfg.decode_batch));
    write_lines(run.path("hypotheses/" + file), hyps);
    return hyps;
  };

  TrainingLoop loop(run, model, adam, cfg.loop);
  loop.progress.cursor = &cursor;
  loop.progress.generators = {{"init", &init_gen}, {"noise", &noise_gen}};
  loop.batch_loss = [&](int64_t) {
    TranslationBatch b = make_translation_batch(train_pairs, cursor.next());
    return model.loss(b.source.ids, b.source.mask, b.target.ids, b.target.mask);
  };
  loop.validate = [&](int64_t step) {
    const double loss = token_loss(model, valid_pairs, cfg.decode_batch);
    std::vector<std::string> hyps = translations(valid_sources, cfg.valid_beam, fmt::format("valid.step{}.txt", step));
    const BleuScore bleu = corpus_bleu(hyps, {valid_refs});
    return rg::Evaluation{.loss = loss, .fields = {{"bleu", bleu.score}}, .score = bleu.score};
  };
  loop.test = [&](int64_t step) {
    if (corpus.test.size() == 0) return;
    const int64_t best_step = loop.load_best();
    const double loss = token_loss(model, encode_pairs(corpus.test, subword, 0), cfg.decode_batch);
    std::vector<std::string> hyps = translations(encode_sentences(corpus.test.source, subword), cfg.beam, "test.txt");
    const BleuScore bleu = corpus_bleu(hyps, {corpus.test.target});
    run.log_eval("test", step, loss, {{"bleu", bleu.score}, {"best_step", static_cast<double>(best_step)}});
    run.note(fmt::format("test (best checkpoint, step {}, beam {}): {} {}", best_step, cfg.beam, bleu.str(),
                         bleu.signature()));
  };
  loop.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_main([&] { return train(argc, argv); });
}
