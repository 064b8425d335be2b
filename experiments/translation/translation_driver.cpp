// The shared translation driver; what it does is described in translation_driver.h.
#include "rmsgrad/experiments/translation/translation_driver.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "rmsgrad/core/escape_bytes.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/dist/batch_share.h"
#include "rmsgrad/experiments/common/bleu.h"
#include "rmsgrad/experiments/common/file_status.h"
#include "rmsgrad/experiments/common/text_file.h"
#include "rmsgrad/layers/save_load.h"
#include "rmsgrad/optim/adam.h"
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

// The longest sentence, in subwords, that validation, the test and
// --translate take: beam search holds a few of its length's states per
// hypothesis, and the Transformer's attention its square.
constexpr size_t kLongestEvaluated = 1000;

// Every sentence of an evaluation set within kLongestEvaluated, or an error
// naming the file and line.
void check_lengths(const std::vector<std::vector<int32_t>>& sentences, const std::vector<int64_t>& lines,
                   const std::string& file) {
  for (size_t i = 0; i < sentences.size(); ++i)
    check(sentences[i].size() <= kLongestEvaluated,
          "{}:{}: {} subwords; the longest sentence this program evaluates or translates is {} (training pairs are "
          "capped by --max-length instead)", file, lines.empty() ? i + 1 : static_cast<size_t>(lines[i]) + 1,
          sentences[i].size(), kLongestEvaluated);
}

// The real (unpadded) tokens of a batch.
double real_tokens(const PaddedBatch& batch) {
  double n = 0.0;
  for (float m : batch.mask.span()) n += m;
  return n;
}

}  // namespace

void apply_synthetic_defaults(CLI::App& app, const TranslationConfig& cfg,
                              std::vector<std::pair<std::string, std::string>> defaults) {
  if (!cfg.train_src.empty()) return;
  defaults.emplace_back("--vocab-size", "400");
  for (const auto& [flag, value] : defaults) {
    CLI::Option* option = app.get_option(flag);  // throws for a flag the app lacks: a driver's bug
    if (option->count() == 0) option->default_val(value);
  }
}

TranslationData read_translation_data(const TranslationConfig& cfg, Run& run) {
  Corpus corpus = read_corpus(cfg, cfg.run.seed);
  run.note(fmt::format("{}: {} training, {} validation, {} test pairs",
                       cfg.train_src.empty() ? "synthetic task" : cfg.train_src, corpus.train.size(),
                       corpus.valid.size(), corpus.test.size()));
  // The validations write <out>/hypotheses/: a link there is refused now, not after the first steps.
  check(!fs::is_symlink(run.path("hypotheses")), "'{}' is a symbolic link; the run writes only into its own "
        "directory", run.path("hypotheses"));
  // A new subword model stays in memory until training starts (save_new_subwords).
  const std::string subword_path = run.path("subword.model");
  // A link, FIFO or folder there counts as present: Subword(path) refuses it by name.
  std::error_code ec;
  const bool saved = run.resuming() && fs::symlink_status(subword_path, ec).type() != fs::file_type::not_found;
  auto joint_text = [&] {
    std::vector<std::string> text = corpus.train.source;
    text.insert(text.end(), corpus.train.target.begin(), corpus.train.target.end());
    return text;
  };
  Subword subword = saved ? Subword(subword_path) : Subword::trained(joint_text(), static_cast<int>(cfg.vocab_size));
  // The model's embeddings are sized by the saved pieces: another --vocab-size
  // could only be recorded, never trained, so it is refused even with
  // --resume-with-changes.
  check(subword.vocab_size() == cfg.vocab_size, "--vocab-size {} on resume: the run's {} has {} pieces and its model "
        "was trained on them; a vocabulary cannot change on resume (start a new run for another size)",
        cfg.vocab_size, subword_path, subword.vocab_size());
  TranslationData d{.corpus = std::move(corpus),
                    .subword = std::move(subword),
                    .subword_is_new = !saved,
                    .train = {},
                    .valid = {},
                    .valid_sources = {},
                    .valid_refs = {}};
  d.train = encode_pairs(d.corpus.train, d.subword, cfg.max_length);
  d.valid = encode_pairs(d.corpus.valid, d.subword, 0);
  auto fingerprint = [](const char* name, const EncodedPairs& pairs) {
    return DataFingerprint{name, static_cast<int64_t>(pairs.size()),
                           content_hash(pairs.source) ^ 31 * content_hash(pairs.target)};
  };
  run.check_same_data({fingerprint("training pairs", d.train), fingerprint("validation pairs", d.valid)});
  check(d.train.size() > 0, "no training pair is left after the length filter");
  const std::string valid_src = cfg.valid_src.empty() ? "the synthetic validation set" : cfg.valid_src;
  check(d.valid.size() > 0, "{}: no validation pair has both sides non-empty; there is nothing to validate on",
        valid_src);
  check_lengths(d.valid.source, d.valid.line, valid_src);
  check_lengths(d.valid.target, d.valid.line, cfg.valid_tgt.empty() ? valid_src : cfg.valid_tgt);
  if (d.corpus.test.size() > 0) {
    const EncodedPairs test = encode_pairs(d.corpus.test, d.subword, 0);
    const std::string test_src = cfg.test_src.empty() ? "the synthetic test set" : cfg.test_src;
    check(test.size() > 0, "{}: no test pair has both sides non-empty; there is nothing to test on", test_src);
    check_lengths(test.source, test.line, test_src);
    check_lengths(test.target, test.line, cfg.test_tgt.empty() ? test_src : cfg.test_tgt);
  }
  d.valid_sources = encode_sentences(d.corpus.valid.source, d.subword);
  if (cfg.valid_limit > 0 && static_cast<int64_t>(d.valid_sources.size()) > cfg.valid_limit)
    d.valid_sources.resize(static_cast<size_t>(cfg.valid_limit));
  d.valid_refs.assign(d.corpus.valid.target.begin(),
                      d.corpus.valid.target.begin() + static_cast<std::ptrdiff_t>(d.valid_sources.size()));
  run.note(fmt::format("SentencePiece BPE, {} pieces; {} training pairs kept ({} longer than {} subwords, {} with "
                       "an empty side dropped)",
                       d.subword.vocab_size(), d.train.size(), d.train.dropped_long, cfg.max_length,
                       d.train.dropped_empty));
  return d;
}

void save_new_subwords(const TranslationData& data, Run& run) {
  if (data.subword_is_new && dist::ProcessGroup::world().writer()) data.subword.save(run.path("subword.model"));
}

Var translation_loss(Seq2Seq& model, const TranslationBatch& b) {
  const dist::BatchShare share = dist::batch_share(dist::ProcessGroup::world(), b.target.batch_size());
  if (share.whole()) return model.loss(b.source.ids, b.source.mask, b.target.ids, b.target.mask);
  TranslationBatch mine{batch_columns(b.source, share.first, share.rows),
                        batch_columns(b.target, share.first, share.rows)};
  ScopedBatchShard shard = share.shard();  // dropout drawn per sentence
  Var loss = model.loss(mine.source.ids, mine.source.mask, mine.target.ids, mine.target.mask);
  // This share's part of the global batch's mean, per sentence or per real target token.
  if (model.loss_mean() == Seq2Seq::LossMean::PerSentence) return share.part_of_mean(loss);
  return loss * static_cast<float>(real_tokens(mine.target) / real_tokens(b.target));
}

namespace {

// Beam-search translations of `sources`, detokenised, kept in hypotheses/<file>.
std::vector<std::string> translations(Seq2Seq& model, const TranslationData& data, const TranslationConfig& cfg,
                                      Run& run, const std::vector<std::vector<int32_t>>& sources, int beam,
                                      const std::string& file) {
  BeamOptions options{.beam = beam, .length_norm = cfg.length_norm};
  std::vector<std::string> hyps = detokenized(data.subword, translate_all(model, sources, options, cfg.decode_batch));
  const fs::path folder = run.path("hypotheses");
  std::error_code ec;
  check(!fs::is_symlink(fs::symlink_status(folder, ec)), "'{}' is a symbolic link; the run writes only into its own "
        "directory", folder.string());
  fs::create_directories(folder, ec);
  check(!ec, "cannot create the folder '{}': {}", folder.string(), ec.message());
  write_lines((folder / file).string(), hyps);
  return hyps;
}

}  // namespace

Evaluation validate_translation(Seq2Seq& model, const TranslationData& data, const TranslationConfig& cfg, Run& run,
                                int64_t step) {
  const double loss = token_loss(model, data.valid, cfg.decode_batch);
  std::vector<std::string> hyps =
      translations(model, data, cfg, run, data.valid_sources, cfg.valid_beam, fmt::format("valid.step{}.txt", step));
  const BleuScore bleu = corpus_bleu(hyps, {data.valid_refs});
  return Evaluation{.loss = loss, .fields = {{"bleu", bleu.score}}, .score = bleu.score};
}

void test_translation(Seq2Seq& model, const TranslationData& data, const TranslationConfig& cfg, Run& run,
                      Trainer& trainer) {
  const ParallelText& test = data.corpus.test;
  if (test.size() == 0) return;
  const int64_t best_step = trainer.load_best();
  const double loss = token_loss(model, encode_pairs(test, data.subword, 0), cfg.decode_batch);
  std::vector<std::string> hyps =
      translations(model, data, cfg, run, encode_sentences(test.source, data.subword), cfg.beam, "test.txt");
  const BleuScore bleu = corpus_bleu(hyps, {test.target});
  trainer.log_test({loss, {{"bleu", bleu.score}, {"best_step", static_cast<double>(best_step)}}});
  run.note(fmt::format("test (best checkpoint, step {}, beam {}): {} {}", best_step, cfg.beam, bleu.str(),
                       bleu.signature()));
}

void restore_translation_settings(const SavedSettings& saved, TranslationConfig& cfg) {
  std::string kind = norm_name(cfg.norm.kind), impl = norm_impl_name(cfg.norm.impl);
  saved.get("norm", kind);
  saved.get("norm-impl", impl);
  cfg.norm.kind = parse_norm_kind(kind);
  cfg.norm.impl = parse_norm_impl(impl);
  saved.get("preact-shift", cfg.norm.preact_shift);
  saved.get("p", cfg.norm.p);
  saved.get("eps", cfg.norm.eps);
}

Subword saved_subwords(const TranslationConfig& cfg) {
  return Subword((fs::path(cfg.run.out) / "subword.model").string());
}

namespace {

// --output may not replace the input, a model, or any file of a run: a
// regular file there is refused when it is the input, a .safetensors or
// .model file, or inside a folder that holds a run.
void check_output_path(const TranslationConfig& cfg) {
  if (cfg.output.empty()) return;
  std::error_code ec;
  const fs::file_status status = fs::status(cfg.output, ec);  // through links
  if (!fs::exists(status)) return;
  check(!fs::is_directory(status), "--output {} is a directory; name a file", cfg.output);
  if (!fs::is_regular_file(status)) return;  // a device or a pipe (/dev/stdout) is written, not replaced
  const fs::path target = fs::canonical(cfg.output, ec);
  check(!fs::equivalent(target, cfg.translate, ec), "--output {} is the file being translated (--translate)",
        cfg.output);
  const std::string extension = target.extension().string();
  check(extension != ".safetensors" && extension != ".model",
        "--output {} is a model file; translations never replace one", cfg.output);
  for (fs::path folder = target.parent_path(); !folder.empty() && folder != folder.root_path();
       folder = folder.parent_path())
    check(!path_exists(folder / "checkpoint.safetensors") &&
              !(path_exists(folder / "config.json") && path_exists(folder / "metrics.jsonl")),
          "--output {} is a file inside the run folder {}; translations never replace a run's files", cfg.output,
          folder.string());
}

// Every parameter of a loaded model finite, or an error naming the file.
void check_finite(const Module& model, const std::string& file) {
  for (const auto& [name, parameter] : model.named_parameters())
    for (float v : parameter.value().span())
      check(std::isfinite(v), "{}: parameter {} holds {}; a model with non-finite weights cannot translate", file,
            name, v);
}

}  // namespace

void translate_file(Seq2Seq& model, const Subword& subword, const TranslationConfig& cfg) {
  check_output_path(cfg);
  const fs::path dir = cfg.run.out;
  fs::path weights = dir / "best.safetensors";
  if (!path_exists(weights)) weights = dir / "checkpoint.safetensors";
  check(path_exists(weights), "--translate: {} has neither best.safetensors nor checkpoint.safetensors",
        dir.string());
  load(model, weights.string());
  check_finite(model, weights.string());

  if (cfg.run.threads > 0) set_num_threads(cfg.run.threads);
  BeamOptions beam{.beam = cfg.beam, .length_norm = cfg.length_norm};
  std::vector<std::string> lines = read_lines(cfg.translate);
  const std::vector<std::vector<int32_t>> sources = encode_sentences(lines, subword);
  check_lengths(sources, {}, cfg.translate);
  std::vector<std::string> out = detokenized(subword, translate_all(model, sources, beam, cfg.decode_batch));
  if (cfg.output.empty()) {
    for (const std::string& line : out) std::cout << line << '\n';
    std::cout.flush();
    check(std::cout.good(), "cannot write the translations to the standard output: {}", std::strerror(errno));
  } else if (path_exists(cfg.output) && !is_file(cfg.output)) {  // a device or a pipe
    std::ofstream device(cfg.output);
    for (const std::string& line : out) device << line << '\n';
    check(device.good(), "cannot write {}: {}", cfg.output, std::strerror(errno));
  } else {
    std::error_code ec;  // through a link to a file, the file is replaced, not the link
    write_lines(path_exists(cfg.output) ? fs::canonical(cfg.output, ec).string() : cfg.output, out);
    std::cerr << escape_bytes(fmt::format("translated {} lines of {} into {} with {}", out.size(), cfg.translate,
                                          cfg.output, weights.string()))
              << '\n';
  }
}

namespace {

// --translate: the model of the run in --out translates a file.
int translate(TranslationConfig cfg, TranslationModelDriver& model_driver) {
  check_omp_num_threads();  // as a Run would
  const SavedSettings saved(cfg.run.out);
  restore_translation_settings(saved, cfg);
  model_driver.restore(saved);
  const Subword subword = saved_subwords(cfg);
  // --precision chooses the products' inputs for translating as for training.
  if (cfg.training.precision) set_product_precision(*cfg.training.precision);
  Generator init_gen(0), noise_gen(1);
  std::unique_ptr<Seq2Seq> model = model_driver.make_model(cfg, subword.vocab_size(), init_gen, noise_gen);
  translate_file(*model, subword, cfg);
  return 0;
}

}  // namespace

int translation_main(int argc, char** argv, const TranslationDriverText& text, TranslationConfig cfg,
                     TranslationModelDriver& model_driver) {
  CLI::App app{text.title};
  add_translation_flags(app, cfg, text.norms, text.norm_places);
  model_driver.add_flags(app);
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
  // Translating is one process's job: under mpirun rank 0 does it.
  if (!cfg.translate.empty()) return dist::ProcessGroup::world().writer() ? translate(cfg, model_driver) : 0;
  apply_synthetic_defaults(app, cfg, text.synthetic_defaults);
  model_driver.check();

  cfg.run.inputs =
      run_inputs(app, {"--train-src", "--train-tgt", "--valid-src", "--valid-tgt", "--test-src", "--test-tgt"});
  Run run(cfg.run, run_settings(app));
  TranslationData data = read_translation_data(cfg, run);
  Generator init_gen(cfg.run.seed), noise_gen(cfg.run.seed + 1);
  std::unique_ptr<Seq2Seq> model = model_driver.make_model(cfg, data.subword.vocab_size(), init_gen, noise_gen);
  run.note(fmt::format("{}, {} parameters, norm {}", text.model_name, model->parameter_count(), norm_name(cfg.norm.kind)));
  BatchCursor cursor(translation_batches(data.train, {.max_sentences = cfg.batch, .max_tokens = cfg.batch_tokens}),
                     cfg.run.seed + 3);
  Adam adam(model->named_parameters(), cfg.adam);
  const std::unique_ptr<LearningRateSchedule> schedule = model_driver.schedule(cfg);
  run.note(fmt::format("{} steps of up to {} sentences{} ({} per epoch); Adam lr {}, β {} {}; clip {}",
                       cfg.training.steps, cfg.batch,
                       cfg.batch_tokens > 0 ? fmt::format(" and {} tokens", cfg.batch_tokens) : "",
                       cursor.batches_per_epoch(), model_driver.lr_description(cfg), adam.options().beta1,
                       adam.options().beta2, cfg.training.clip));

  Trainer trainer(run, *model, adam, cfg.training);
  trainer.keep("init", init_gen);
  trainer.keep("noise", noise_gen);
  trainer.keep(cursor);
  trainer.start();
  save_new_subwords(data, run);
  if (trainer.due_for_validation()) trainer.validate(validate_translation(*model, data, cfg, run, 0));
  while (trainer.running()) {
    if (schedule) adam.set_lr(schedule->lr(trainer.next_step()));
    trainer.step(translation_loss(*model, make_translation_batch(data.train, cursor.next())));
    if (trainer.due_for_log()) trainer.log_train();
    if (trainer.due_for_validation())
      trainer.validate(validate_translation(*model, data, cfg, run, trainer.steps_taken()));
  }
  if (trainer.due_for_test()) test_translation(*model, data, cfg, run, trainer);
  return 0;
}

}  // namespace rg
