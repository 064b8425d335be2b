#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/translation/translation_config.h"

#include "rmsgrad/experiments/translation/synthetic_translation.h"

namespace rg {

void add_translation_flags(CLI::App& app, TranslationConfig& cfg, const std::vector<std::string>& norms,
                           const std::string& norm_places) {
  add_run_options(app, cfg.run);
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
  app.add_option("--vocab-size", cfg.vocab_size, "SentencePiece pieces (the synthetic task defaults to 400)")
      ->check(rg::in_range(16, 1 << 20));
  app.add_option("--max-length", cfg.max_length, "drop training pairs longer than this many subwords (0: keep all)")
      ->check(rg::non_negative);
  app.add_option("--synthetic-pairs", cfg.synthetic_pairs, "training pairs of the synthetic task")
      ->check(rg::in_range(10, 1 << 24));
  app.add_option("--synthetic-max-words", cfg.synthetic_max_words, "longest synthetic source sentence, in words")
      ->check(rg::in_range(3, 200));
  add_norm_flags(app, cfg.norm, norms, norm_places);
  app.add_option("--dropout", cfg.dropout, "dropout rate (RNNSearch: word vectors and the deep output; Transformer: every sublayer's output, "
                 "the FFN's hidden layer and the embedded inputs)")
      ->check(rg::in_range(0.0, 0.99));
  app.add_option("--label-smoothing", cfg.label_smoothing, "label smoothing ε")->check(rg::in_range(0.0, 0.99));
  app.add_option("--lr", cfg.adam.lr, "Adam learning rate (its peak, under a schedule)")->check(rg::positive);
  app.add_option("--batch", cfg.batch, "at most this many sentences per step")->check(rg::in_range(1, 1 << 20));
  app.add_option("--batch-tokens", cfg.batch_tokens,
                 "at most this many padded tokens per step, counted on the longer side (0: no limit)")
      ->check(rg::in_range(0, 1 << 24));
  app.add_option("--clip", cfg.training.clip, "global gradient norm clip")->check(rg::positive);
  app.add_option("--steps", cfg.training.steps, "training steps")->check(rg::positive);
  app.add_option("--eval-every", cfg.training.eval_every, "steps between validations")->check(rg::positive);
  app.add_option("--beam", cfg.beam, "beam size for the test set and --translate (1: greedy)")->check(rg::in_range(1, 100));
  app.add_option("--valid-beam", cfg.valid_beam, "beam size for validation BLEU")->check(rg::in_range(1, 100));
  app.add_option("--length-norm", cfg.length_norm, "rank finished hypotheses by score / length^this (0: off)")
      ->check(rg::in_range(0.0, 5.0));
  app.add_option("--valid-limit", cfg.valid_limit, "validation BLEU on the first N sentences (0: all)")
      ->check(rg::non_negative);
  app.add_option("--decode-batch", cfg.decode_batch, "sentences per beam-search batch")->check(rg::positive);
  add_trainer_flags(app, cfg.training);
}

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

}  // namespace rg
