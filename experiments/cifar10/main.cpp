// CIFAR-10 with ConvPool-CNN-C and every normalization: the paper's Table 10.
//
//   build/bin/cifar10 --norm rmsnorm --data ../shared/data/cifar10/cifar-10-batches-bin-prefix --out runs/cifar/rmsnorm
//   build/bin/cifar10 --norm layernorm --width 0.25 --steps 300     # synthetic data, a short CPU run
//
// The recipe (experiments/common/recipes.h: Salimans & Kingma's CIFAR code, as
// Zhang & Sennrich 2019 ran it, at half its width; the paper's is --width 1):
// pixels (x − 127.5)/128, ZCA whitening fit on the training set (real data
// only, unless --zca on: see preprocess), Gaussian input
// noise σ 0.15, Adam with batch 100 and lr 0.003 (0.0003 without a norm),
// constant for the first half of training and then linearly down to 0, with β1
// 0.9 in the first half and 0.5 in the second. --steps caps the run; the
// schedule then spans the capped run, so a short run has the same shape.
//
// Each evaluation (step 0, then every epoch, and the last step) logs the
// validation error (and the test error when a test set was given) and writes
// <out>/checkpoint.safetensors, from which --resume continues exactly.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/dist/batch_share.h"
#include "rmsgrad/experiments/cifar10/cifar_config.h"
#include "rmsgrad/experiments/cifar10/cifar_data.h"
#include "rmsgrad/experiments/cifar10/zca.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/models/convpool_cnn.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/optim/schedule.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"

using namespace rg;
using cifar::CifarConfig;
namespace fs = std::filesystem;

namespace {

// The rows of logits [N, classes] whose largest value is not at the label.
int64_t count_wrong(const Var& logits, const std::vector<int32_t>& labels) {
  int64_t wrong = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const float* row = logits.value().data() + static_cast<int64_t>(i) * logits.dim(1);
    wrong += (std::max_element(row, row + logits.dim(1)) - row) != labels[i];
  }
  return wrong;
}

// Loss and error of the model in eval mode over a whole split, in chunks.
Scores evaluate(ConvPoolCnnC& model, const cifar::ImageSet& set, int64_t chunk) {
  NoGradGuard no_grad;
  model.eval();
  double loss_sum = 0.0;
  int64_t wrong = 0;
  for (int64_t begin = 0; begin < set.size(); begin += chunk) {
    const int64_t n = std::min(chunk, set.size() - begin);
    Tensor images = Tensor::empty(Shape{n, 3, cifar::kSide, cifar::kSide});
    std::copy_n(set.images.data() + begin * cifar::kPixels, n * cifar::kPixels, images.data());
    std::vector<int32_t> labels(set.labels.begin() + begin, set.labels.begin() + begin + n);
    Var logits = model(constant(images));
    CrossEntropyOptions sum;
    sum.mean = false;
    loss_sum += cross_entropy(logits, Indices(labels), sum).item();
    wrong += count_wrong(logits, labels);
  }
  model.train();
  return {loss_sum / static_cast<double>(set.size()), {{"error_pct", 100.0 * static_cast<double>(wrong) / set.size()}}};
}

// (x − 127.5)/128 on every split, then ZCA fit on the training rows.
void preprocess(cifar::Splits& splits, const CifarConfig& cfg, Run& run) {
  for (cifar::ImageSet* set : {&splits.train, &splits.valid, &splits.test})
    if (set->size() > 0)
      for (float& v : set->images.span()) v = (v - 127.5f) / 128.0f;
  // The synthetic images are a few class patterns plus independent pixel
  // noise; whitening would scale every one of the ~3,000 noise directions up
  // to the variance of the few signal directions and drown the classes.
  const bool whiten = cfg.zca == "on" || (cfg.zca == "auto" && !cfg.data.empty());
  if (!whiten) {
    run.note("zca: off");
    return;
  }
  Tensor rows = splits.train.images.reshape(Shape{splits.train.size(), cifar::kPixels});
  std::string log;
  cifar::Zca zca = cifar::fit_zca_cached(rows, cfg.zca_cache, log);
  run.note(log);
  for (cifar::ImageSet* set : {&splits.train, &splits.valid, &splits.test})
    if (set->size() > 0) {
      Tensor r = set->images.reshape(Shape{set->size(), cifar::kPixels});
      cifar::apply_zca(zca, r);
    }
}

int train(int argc, char** argv) {
  CifarConfig cfg;
  CLI::App app{"CIFAR-10 with ConvPool-CNN-C and a choice of normalization (Zhang & Sennrich 2019, Table 10)"};
  add_cifar_flags(app, cfg);
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;

  cfg.run.inputs = run_inputs(app, {"--data"});
  Run run(cfg.run, run_settings(app));
  cifar::Splits splits = cifar::load_splits(cfg.data, cfg.valid_size,
                                            cfg.train_size > 0 ? cfg.train_size : 10000, cfg.run.seed);
  if (cfg.train_size > 0) splits.train = cifar::take(splits.train, cfg.train_size);
  run.note(splits.description);
  if (!splits.skipped.empty()) run.note(cifar::skipped_note(splits.skipped));
  auto fingerprint = [](const char* name, const cifar::ImageSet& set) {
    return DataFingerprint{name, set.size(), content_hash(set.images) ^ content_hash(set.labels)};
  };
  run.check_same_data({fingerprint("training images", splits.train), fingerprint("validation images", splits.valid),
                       fingerprint("test images", splits.test)});
  preprocess(splits, cfg, run);

  Generator init_gen(cfg.run.seed), noise_gen(cfg.run.seed + 1);
  ConvPoolCnnC model(cifar::model_options(cfg), init_gen, noise_gen);
  run.note(fmt::format("ConvPool-CNN-C, {} parameters, norm {}", model.parameter_count(), norm_name(cfg.norm.kind)));

  BatchCursor cursor(shuffled_batches(splits.train.size(), cfg.batch, true), cfg.run.seed + 2);
  const int64_t per_epoch = cursor.batches_per_epoch();
  check(per_epoch > 0, "cifar10: {} training images make no batch of {}", splits.train.size(), cfg.batch);
  const int64_t total = cfg.steps > 0 ? std::min(cfg.steps, cfg.epochs * per_epoch) : cfg.epochs * per_epoch;
  const AdamOptions adam_options = cifar::adam_options(cfg);
  const LinearDecaySchedule schedule(adam_options.lr, total / 2, total, 0.0);
  Adam adam(model.named_parameters(), adam_options);
  run.note(fmt::format("{} steps of {} images ({} per epoch); lr {}; β1 0.9 then 0.5 after step {}", total, cfg.batch,
                       per_epoch, schedule.str(), total / 2));

  if (!run.resuming() && cfg.norm.kind == NormKind::WeightNorm) {
    model.init_weight_norm(cifar::take(splits.train, 500).images);
    run.note("weightnorm: data-dependent initialisation on 500 training images");
  }

  cfg.training.steps = total;
  cfg.training.eval_every = per_epoch;
  Trainer trainer(run, model, adam, cfg.training);
  trainer.keep("init", init_gen);
  trainer.keep("noise", noise_gen);
  trainer.keep(cursor);
  auto validation = [&] {
    const Scores valid = evaluate(model, splits.valid, cfg.eval_batch);
    Evaluation result{.loss = valid.loss, .fields = valid.fields};
    if (splits.test.size() > 0) result.test = evaluate(model, splits.test, cfg.eval_batch);
    return result;
  };

  // Under mpirun each process takes its share of every batch (dist/batch_share.h).
  const dist::BatchShare share = dist::batch_share(dist::ProcessGroup::world(), cfg.batch);
  Tensor images = Tensor::empty(Shape{share.rows, 3, cifar::kSide, cifar::kSide});
  std::vector<int32_t> labels(share.rows);
  trainer.start();
  if (trainer.due_for_validation()) trainer.validate(validation());
  while (trainer.running()) {
    const Batch& batch = cursor.next();
    check(static_cast<int64_t>(batch.size()) == share.global, "cifar10: a batch of {}, expected {}", batch.size(),
          share.global);
    for (int64_t i = 0; i < share.rows; ++i) {
      const int64_t example = batch[share.first + i];
      std::copy_n(splits.train.images.data() + example * cifar::kPixels, cifar::kPixels,
                  images.data() + i * cifar::kPixels);
      labels[i] = splits.train.labels[example];
    }
    adam.set_lr(schedule.lr(trainer.next_step()));
    adam.set_beta1(trainer.next_step() > total / 2 ? 0.5 : 0.9);
    ScopedBatchShard shard = share.shard();  // input noise and dropout drawn per example
    Var logits = model(constant(images));
    // The training error of each logged interval (this share's).
    trainer.add_to_interval("wrong", static_cast<double>(count_wrong(logits, labels)));
    trainer.add_to_interval("batches", 1.0);
    trainer.step(share.part_of_mean(cross_entropy(logits, Indices(labels))));

    if (trainer.due_for_log()) {
      const double examples = trainer.interval_sum("batches") * static_cast<double>(share.rows);
      trainer.log_train({{"error_pct", 100.0 * trainer.interval_sum("wrong") / examples}, {"lr", adam.lr()}});
    }
    if (trainer.due_for_validation()) trainer.validate(validation());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_polite_threads(argv);  // short OpenMP spins, for a machine shared with other jobs
  return run_main(argc, argv, train);
}
