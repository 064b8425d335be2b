// A LLaMA-style character language model (models/llama.h) on the Children's
// Book Test books, with any of the paper's norms in every block: where RMSNorm
// is used today.
//
//   build/bin/lm --data ../shared/data/cbt/CBTest/data --norm rmsnorm --train-minutes 30 --out runs/lm/rmsnorm
//   build/bin/lm --steps 300                          # synthetic sentences, a short CPU run
//
// Training: windows of --context + 1 characters at random places in the nine
// training books (experiments/lm/char_text.h), --batch of them per step; the
// loss is the cross-entropy of every next character. Adam (β 0.9, 0.95, no
// weight decay), a linear warm-up then a cosine to a tenth of --lr, clip 1:
// the recipe (experiments/common/recipes.h), which bench_step --model lm times.
//
// Each validation logs the loss (nats per character) and bits per character
// (loss / ln 2) over the first --valid-chars characters of the held-out book,
// in windows that do not overlap (each character predicted from the ones
// before it in its window), and writes <out>/checkpoint.safetensors, from
// which --resume continues exactly. At the end the model writes --sample-chars
// characters after --prompt to <out>/sample.txt (temperature, top-k).
#include <CLI/CLI.hpp>

#include <cmath>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/dist/batch_share.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/lm/char_text.h"
#include "rmsgrad/experiments/lm/lm_config.h"
#include "rmsgrad/models/llama.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/optim/schedule.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"

using namespace rg;
using lm::LmConfig;

namespace {

// Mean cross-entropy per character over windows of context + 1 of `ids`.
Scores evaluate(Llama& model, const std::vector<int32_t>& ids, int64_t context, int64_t batch) {
  NoGradGuard no_grad;
  const int64_t windows = std::max<int64_t>(1, (static_cast<int64_t>(ids.size()) - 1) / context);
  double loss_sum = 0.0;
  for (int64_t first = 0; first < windows; first += batch) {
    const int64_t n = std::min(batch, windows - first);
    std::vector<int32_t> inputs, targets;
    for (int64_t w = first; w < first + n; ++w) {
      const auto at = ids.begin() + w * context;
      inputs.insert(inputs.end(), at, at + context);
      targets.insert(targets.end(), at + 1, at + context + 1);
    }
    const Var logits = model.forward(Indices(Shape{n, context}, std::move(inputs)));
    CrossEntropyOptions sum{.mean = false};
    loss_sum += cross_entropy(reshape(logits, {n * context, -1}), Indices(std::move(targets)), sum).item();
  }
  const double loss = loss_sum / static_cast<double>(windows * context);
  return {loss, {{"bpc", loss / std::log(2.0)}}};
}

// The sampling flags against the text, before any training: the sample comes
// at the end, and a flag it cannot honour must not cost a whole run.
void check_sampling(const LmConfig& cfg, const lm::CharText& text) {
  if (cfg.sample_chars == 0) return;
  check(cfg.top_k <= text.vocab(), "--top-k {} is more than the {} symbols of the training text's alphabet; give "
        "at most {} (0: all)", cfg.top_k, text.vocab(), text.vocab());
  check(!cfg.prompt.empty(), "--prompt is empty; the sample continues a text of at least one character");
  std::string missing;
  for (char c : cfg.prompt)
    if (text.alphabet.find(c, 1) == std::string::npos && missing.find(c) == std::string::npos) missing += c;
  if (missing.empty()) return;
  std::string named;
  for (char c : missing) {
    const auto byte = static_cast<unsigned char>(c);
    named += (named.empty() ? "" : ", ") +
             (byte >= 0x20 && byte < 0x7f ? fmt::format("'{}'", c) : fmt::format("byte 0x{:02x}", byte));
  }
  throw Error(fmt::format("--prompt has characters the training text lacks: {}; the model has never seen them "
                          "(give a prompt in the text's own characters)", named));
}

int train(int argc, char** argv) {
  LmConfig cfg;
  CLI::App app{"a LLaMA-style character language model on the Children's Book Test books"};
  add_lm_flags(app, cfg);
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;

  cfg.run.inputs = run_inputs(app, {"--data"});
  Run run(cfg.run, run_settings(app));
  const lm::CharText text = cfg.data.empty() ? lm::synthetic_text(cfg.synthetic_chars, cfg.run.seed)
                                             : lm::read_cbt_books(cfg.data, cfg.valid_book);
  run.note(text.description);
  check(static_cast<int64_t>(text.train.size()) > cfg.context + 1, "lm: {} training characters make no window of {}",
        text.train.size(), cfg.context + 1);
  const std::vector<int32_t> valid(text.valid.begin(),
                                   text.valid.begin() + std::min<int64_t>(cfg.valid_chars, text.valid.size()));
  check(static_cast<int64_t>(valid.size()) > cfg.context, "lm: {} validation characters make no window of {}",
        valid.size(), cfg.context + 1);
  check_sampling(cfg, text);
  run.check_same_data({{"training text", static_cast<int64_t>(text.train.size()), content_hash(text.train)},
                       {"validation text", static_cast<int64_t>(valid.size()), content_hash(valid)}});

  Generator init_gen(cfg.run.seed), data_gen(cfg.run.seed + 1), sample_gen(cfg.run.seed + 2);
  Llama model(lm::model_options(cfg, text.vocab()), init_gen);
  run.note(fmt::format("LLaMA-style model: {} blocks, d {}, {} heads, SwiGLU {}, norm {}, {} embeddings; "
                       "{} parameters",
                       cfg.layers, cfg.model_size, cfg.heads, cfg.ffn, norm_name(cfg.norm.kind), cfg.tie ? "tied" : "untied",
                       model.parameter_count()));

  AdamOptions adam_options = cfg.kRecipe.adam;
  adam_options.lr = cfg.lr;
  Adam adam(model.named_parameters(), adam_options);
  const int64_t warmup = cfg.warmup >= 0 ? cfg.warmup : std::min<int64_t>(100, cfg.training.steps / 10);
  const CosineSchedule schedule(cfg.lr, cfg.training.steps, cfg.lr / 10, warmup);
  run.note(fmt::format("{} steps of {} windows of {} characters; lr {}", cfg.training.steps, cfg.batch, cfg.context,
                       schedule.str()));
  TrainingOptions training = cfg.training;
  // An epoch: as many windows as the training text has characters to start one at.
  training.batches_per_epoch = static_cast<double>(static_cast<int64_t>(text.train.size()) - cfg.context) /
                               static_cast<double>(cfg.batch);
  Trainer trainer(run, model, adam, training);
  trainer.keep("init", init_gen);
  trainer.keep("data", data_gen);
  trainer.keep("sample", sample_gen);
  auto validation = [&] {
    const Scores scores = evaluate(model, valid, cfg.context, cfg.batch);
    return Evaluation{.loss = scores.loss, .fields = scores.fields, .score = -scores.fields.at(0).second};
  };

  // Under mpirun every process draws the same global batch and takes its share (dist/batch_share.h).
  const dist::BatchShare share = dist::batch_share(dist::ProcessGroup::world(), cfg.batch);
  const int64_t places = static_cast<int64_t>(text.train.size()) - cfg.context;
  trainer.start();
  if (trainer.due_for_validation()) trainer.validate(validation());
  while (trainer.running()) {
    std::vector<int32_t> inputs, targets;
    for (int64_t w = 0; w < cfg.batch; ++w) {
      const int64_t at = data_gen.randint(places);
      if (w < share.first || w >= share.first + share.rows) continue;
      inputs.insert(inputs.end(), text.train.begin() + at, text.train.begin() + at + cfg.context);
      targets.insert(targets.end(), text.train.begin() + at + 1, text.train.begin() + at + cfg.context + 1);
    }
    adam.set_lr(schedule.lr(trainer.next_step()));
    const Var logits = model.forward(Indices(Shape{share.rows, cfg.context}, std::move(inputs)));
    trainer.step(share.part_of_mean(
        cross_entropy(reshape(logits, {share.rows * cfg.context, text.vocab()}), Indices(std::move(targets)))));
    if (trainer.due_for_log()) trainer.log_train({{"lr", adam.lr()}});
    if (trainer.due_for_validation()) trainer.validate(validation());
  }

  // The sample of a run that trained to its end (not one stopped by --stop-after), written whole.
  if (cfg.sample_chars > 0 && trainer.due_for_test()) {
    const std::string sample =
        text.decode(model.generate(lm::encode(text.alphabet, cfg.prompt), cfg.sample_chars, cfg.temperature,
                                   cfg.top_k, sample_gen));
    write_file_atomically(run.path("sample.txt"), cfg.prompt + sample + "\n");
    run.note(fmt::format("sample (temperature {}, top-k {}): {}{}", cfg.temperature, cfg.top_k, cfg.prompt, sample));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_polite_threads(argv);  // short OpenMP spins, for a machine shared with other jobs
  return run_main(argc, argv, train);
}
