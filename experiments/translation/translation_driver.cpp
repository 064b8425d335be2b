// The shared translation driver; what it does is described in translation_driver.h.
#include "rmsgrad/experiments/translation/translation_driver.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/dist/batch_share.h"
#include "rmsgrad/experiments/common/bleu.h"
#include "rmsgrad/experiments/common/run.h"
#include "rmsgrad/experiments/common/text_file.h"
#include "rmsgrad/experiments/common/training_checkpoint.h"
#include "rmsgrad/experiments/common/training_loop.h"
#include "rmsgrad/experiments/translation/beam_search.h"
#include "rmsgrad/experiments/translation/translation_eval.h"

namespace rg {

namespace fs = std::filesystem;

SavedSettings::SavedSettings(const std::string& run_dir) : path_((fs::path(run_dir) / "config.json").string()) {
  std::ifstream file(path_);
  check(file.good(), "--translate: {} has no config.json (is --out the training run's directory?)", run_dir);
  try {
    json_ = nlohmann::json::parse(file);
  } catch (const std::exception& e) {
    throw Error(fmt::format("--translate: {} is not valid JSON: {}", path_, e.what()));
  }
}

namespace {

// The real (unpadded) tokens of a batch.
double real_tokens(const PaddedBatch& batch) {
  double n = 0.0;
  for (float m : batch.mask.span()) n += m;
  return n;
}

int translate_file(const TranslationRecipe& recipe, TranslationConfig cfg) {
  const fs::path dir = cfg.run.out;
  SavedSettings saved(dir.string());
  saved.get("norm", cfg.norm.norm);
  saved.get("norm-impl", cfg.norm.impl);
  saved.get("preact-shift", cfg.norm.preact_shift);
  saved.get("p", cfg.norm.p);
  saved.get("eps", cfg.norm.eps);
  recipe.restore_model_flags(saved);

  Subword subword((dir / "subword.model").string());
  fs::path weights = dir / "best.safetensors";
  if (!fs::exists(weights)) weights = dir / "checkpoint.safetensors";
  check(fs::exists(weights), "--translate: {} has neither best.safetensors nor checkpoint.safetensors",
        dir.string());
  Generator init_gen(0), noise_gen(1);
  std::unique_ptr<Seq2Seq> model = recipe.build(cfg, subword.vocab_size(), init_gen, noise_gen);
  load_trained_model(weights.string(), *model);

  if (cfg.run.threads > 0) set_num_threads(cfg.run.threads);
  BeamOptions beam{.beam = cfg.beam, .length_norm = cfg.length_norm};
  std::vector<std::string> lines = read_lines(cfg.translate);
  std::vector<std::string> out =
      detokenized(subword, translate_all(*model, encode_sentences(lines, subword), beam, cfg.decode_batch));
  if (cfg.output.empty()) {
    for (const std::string& line : out) std::cout << line << '\n';
  } else {
    write_lines(cfg.output, out);
    std::cerr << fmt::format("translated {} lines of {} into {} with {}\n", out.size(), cfg.translate, cfg.output,
                             weights.string());
  }
  return 0;
}

}  // namespace

int translation_main(int argc, char** argv, const TranslationRecipe& recipe) {
  restart_with_polite_threads(argv);  // first, before MPI starts: see core/polite_threads.h
  return run_main([&]() -> int {
    TranslationConfig cfg = recipe.defaults;
    CLI::App app{recipe.title};
    add_translation_flags(app, cfg, recipe.norms, recipe.norm_places);
    recipe.add_model_flags(app);
    if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
    if (!cfg.translate.empty()) {
      // Translating is one process's job: under mpirun rank 0 does it, the
      // others would only print the same lines again.
      return dist::ProcessGroup::world().writer() ? translate_file(recipe, cfg) : 0;
    }
    const bool synthetic = cfg.train_src.empty();
    if (synthetic) {
      std::vector<std::pair<std::string, std::string>> defaults = recipe.synthetic_defaults;
      defaults.emplace_back("--vocab-size", "400");
      for (const auto& [flag, value] : defaults) {
        CLI::Option* option = app.get_option(flag);  // throws for a flag the app lacks: a recipe's bug
        if (option->count() == 0) option->default_val(value);
      }
    }

    Run run(app, cfg.run);
    Corpus corpus = read_corpus(cfg, cfg.run.seed);
    run.note(fmt::format("{}: {} training, {} validation, {} test pairs", synthetic ? "synthetic task" : cfg.train_src,
                         corpus.train.size(), corpus.valid.size(), corpus.test.size()));

    // A new subword model stays in memory until training starts, so that a
    // start that fails leaves an earlier run's subword.model as it was.
    const std::string subword_path = run.path("subword.model");
    const bool subword_saved = run.resuming() && fs::exists(subword_path);
    auto joint_text = [&] {
      std::vector<std::string> text = corpus.train.source;
      text.insert(text.end(), corpus.train.target.begin(), corpus.train.target.end());
      return text;
    };
    Subword subword = subword_saved ? Subword(subword_path)
                                    : Subword::trained(joint_text(), static_cast<int>(cfg.vocab_size));
    EncodedPairs train_pairs = encode_pairs(corpus.train, subword, cfg.max_length);
    EncodedPairs valid_pairs = encode_pairs(corpus.valid, subword, 0);
    check(train_pairs.size() > 0, "no training pair is left after the length filter");
    std::vector<std::vector<int32_t>> valid_sources = encode_sentences(corpus.valid.source, subword);
    if (cfg.valid_limit > 0 && static_cast<int64_t>(valid_sources.size()) > cfg.valid_limit)
      valid_sources.resize(static_cast<size_t>(cfg.valid_limit));
    std::vector<std::string> valid_refs(
        corpus.valid.target.begin(), corpus.valid.target.begin() + static_cast<std::ptrdiff_t>(valid_sources.size()));
    run.note(fmt::format("SentencePiece BPE, {} pieces; {} training pairs kept ({} longer than {} subwords, {} with "
                         "an empty side dropped)",
                         subword.vocab_size(), train_pairs.size(), train_pairs.dropped_long, cfg.max_length,
                         train_pairs.dropped_empty));

    Generator init_gen(cfg.run.seed), noise_gen(cfg.run.seed + 1);
    std::unique_ptr<Seq2Seq> model = recipe.build(cfg, subword.vocab_size(), init_gen, noise_gen);
    run.note(fmt::format("{}, {} parameters, norm {}", recipe.model_name, model->parameter_count(), cfg.norm.norm));

    BucketOptions buckets;
    buckets.max_sentences = cfg.batch;
    buckets.max_tokens = cfg.batch_tokens;
    BatchCursor cursor(translation_batches(train_pairs, buckets), cfg.run.seed + 3);
    AdamOptions adam_options = recipe.adam ? recipe.adam(cfg) : AdamOptions{};
    adam_options.lr = cfg.lr;
    Adam adam(model->named_parameters(), adam_options);
    const std::string schedule = recipe.describe_schedule ? recipe.describe_schedule(cfg) : "";
    run.note(fmt::format("{} steps of up to {} sentences{} ({} per epoch); Adam lr {}{}, β {} {}; clip {}",
                         cfg.loop.steps, cfg.batch,
                         cfg.batch_tokens > 0 ? fmt::format(" and {} tokens", cfg.batch_tokens) : "",
                         cursor.batches_per_epoch(), cfg.lr, schedule.empty() ? "" : " " + schedule,
                         adam_options.beta1, adam_options.beta2, cfg.loop.clip));
    fs::create_directories(run.path("hypotheses"));

    // Beam-search translations of `sources`, detokenised, kept in hypotheses/<file>.
    auto translations = [&](const std::vector<std::vector<int32_t>>& sources, int beam, const std::string& file) {
      BeamOptions options{.beam = beam, .length_norm = cfg.length_norm};
      std::vector<std::string> hyps = detokenized(subword, translate_all(*model, sources, options, cfg.decode_batch));
      write_lines(run.path("hypotheses/" + file), hyps);
      return hyps;
    };

    TrainingLoop loop(run, *model, adam, cfg.loop);
    loop.progress.cursor = &cursor;
    loop.progress.generators = {{"init", &init_gen}, {"noise", &noise_gen}};
    loop.batch_loss = [&](int64_t step) {
      if (recipe.learning_rate) adam.set_lr(recipe.learning_rate(cfg, step));
      TranslationBatch b = make_translation_batch(train_pairs, cursor.next());
      // Under mpirun each process takes its share of the sentences (dist/batch_share.h).
      const dist::BatchShare share = dist::batch_share(dist::ProcessGroup::world(), b.target.batch_size());
      if (share.whole()) return model->loss(b.source.ids, b.source.mask, b.target.ids, b.target.mask);
      TranslationBatch mine{batch_columns(b.source, share.first, share.rows),
                            batch_columns(b.target, share.first, share.rows)};
      ScopedBatchShard shard = share.shard();  // dropout drawn per sentence
      Var loss = model->loss(mine.source.ids, mine.source.mask, mine.target.ids, mine.target.mask);
      // This share's part of the global batch's mean, per sentence or per real target token.
      if (model->loss_mean() == Seq2Seq::LossMean::PerSentence) return share.part_of_mean(loss);
      return loss * static_cast<float>(real_tokens(mine.target) / real_tokens(b.target));
    };
    loop.validate = [&](int64_t step) {
      const double loss = token_loss(*model, valid_pairs, cfg.decode_batch);
      std::vector<std::string> hyps =
          translations(valid_sources, cfg.valid_beam, fmt::format("valid.step{}.txt", step));
      const BleuScore bleu = corpus_bleu(hyps, {valid_refs});
      return Evaluation{.loss = loss, .fields = {{"bleu", bleu.score}}, .score = bleu.score};
    };
    loop.test = [&](int64_t step) {
      if (corpus.test.size() == 0) return;
      const int64_t best_step = loop.load_best();
      const double loss = token_loss(*model, encode_pairs(corpus.test, subword, 0), cfg.decode_batch);
      std::vector<std::string> hyps =
          translations(encode_sentences(corpus.test.source, subword), cfg.beam, "test.txt");
      const BleuScore bleu = corpus_bleu(hyps, {corpus.test.target});
      run.log_eval("test", step, loss, {{"bleu", bleu.score}, {"best_step", static_cast<double>(best_step)}});
      run.note(fmt::format("test (best checkpoint, step {}, beam {}): {} {}", best_step, cfg.beam, bleu.str(),
                           bleu.signature()));
    };
    if (!subword_saved && dist::ProcessGroup::world().writer()) subword.save(subword_path);
    loop.run();
    return 0;
  });
}

}  // namespace rg
