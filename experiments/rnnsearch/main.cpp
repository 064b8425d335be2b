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
#include <filesystem>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/bleu.h"
#include "rmsgrad/experiments/common/run.h"
#include "rmsgrad/experiments/common/training_loop.h"
#include "rmsgrad/experiments/rnnsearch/beam_search.h"
#include "rmsgrad/experiments/rnnsearch/translation_config.h"
#include "rmsgrad/experiments/rnnsearch/translation_eval.h"
#include "rmsgrad/optim/adam.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

int train(int argc, char** argv) {
  TranslationConfig cfg;
  CLI::App app{"Machine translation with RNNSearch, as Nematus (Zhang & Sennrich 2019, Tables 2-3)"};
  add_translation_flags(app, cfg);
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
  if (!cfg.translate.empty()) return translate_file(cfg, cfg.run);
  const bool synthetic = cfg.train_src.empty();
  if (synthetic && app.count("--vocab-size") == 0) cfg.vocab_size = 400;

  Run run(app, cfg.run);
  Corpus corpus = read_corpus(cfg, cfg.run.seed);
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

  Generator init_gen(cfg.run.seed), noise_gen(cfg.run.seed + 1);
  RNNSearch model(model_options(cfg, subword.vocab_size()), init_gen, noise_gen);
  run.note(fmt::format("RNNSearch, {} parameters, norm {}", model.parameter_count(), cfg.norm.norm));

  BucketOptions buckets;
  buckets.max_sentences = cfg.batch;
  buckets.max_tokens = cfg.max_tokens;
  BatchCursor cursor(translation_batches(train_pairs, buckets), cfg.run.seed + 3);
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

int main(int argc, char** argv) { return run_main(argc, argv, train); }
