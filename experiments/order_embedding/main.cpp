// Image–caption retrieval with order-embeddings and a choice of normalization
// inside the sentence encoder's GRU: the paper's Tables 7 and 8.
//
//   build/bin/order_embedding --norm rmsnorm --out runs/oe/rmsnorm        # synthetic task
//   build/bin/order_embedding --norm rmsnorm
//       --features ../shared/data/multi30k/features/test_2016_flickr-resnet50-avgpool.npy
//       --captions ../shared/data/multi30k/task2/raw/test_2016.{1,2,3,4,5}.en.gz    (one line)
//
// The recipe (Vendrov et al. 2016, as Zhang & Sennrich 2019 ran it): word
// vectors 300, GRU 1024, images through one linear layer, both L2-normalised
// and made non-negative; the contrastive loss over all in-batch negatives in
// both directions with margin 0.05; Adam lr 1e-3, batch 128, each parameter's
// gradient clipped to norm 2.0 on its own. The model and loss are in
// models/order_embedding.h, the data and split in caption_data.h, the metrics
// in retrieval.h.
//
// Every --eval-every steps (and at the last step) the validation recalls are
// logged and <out>/checkpoint.safetensors written (--resume continues from
// it); when the validation R@1 + R@5 + R@10 of image retrieval is the best so
// far, the model is also kept in <out>/best.safetensors. At the end the best
// model is scored on the test images: the test line of metrics.jsonl, with
// the numbers of the paper's Table 7 and the step it was selected at.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/dist/batch_share.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/order_embedding/caption_data.h"
#include "rmsgrad/experiments/order_embedding/oe_config.h"
#include "rmsgrad/experiments/order_embedding/retrieval.h"
#include "rmsgrad/models/order_embedding.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"

using namespace rg;
using namespace rg::oe;

namespace {

// Captions [first, first + count) of a set as one padded batch.
PaddedBatch caption_batch(const RetrievalSet& set, int64_t first, int64_t count) {
  std::vector<int64_t> index(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) index[i] = first + i;
  return pad_batch(set.captions, index);
}

Tensor feature_rows(const RetrievalSet& set, const std::vector<int64_t>& images) {
  const int64_t d = set.features.dim(1);
  Tensor out = Tensor::empty(Shape{static_cast<int64_t>(images.size()), d});
  for (size_t i = 0; i < images.size(); ++i)
    std::copy_n(set.features.data() + images[i] * d, d, out.data() + static_cast<int64_t>(i) * d);
  return out;
}

// The retrieval metrics in folds, and the contrastive loss of the set's
// images with their first captions in batches of `batch` (the scale of a
// training batch's loss).
Evaluation evaluate(OrderEmbeddingModel& model, const RetrievalSet& set, int64_t fold_images, int64_t batch) {
  NoGradGuard no_grad;
  const int64_t k = set.captions_per_image, n = set.num_images();
  const RetrievalScores scores = fold_scores(n, k, fold_images, [&](int64_t first, int64_t count) {
    std::vector<Var> captions;
    for (int64_t c = first * k; c < (first + count) * k; c += 500) {
      PaddedBatch b = caption_batch(set, c, std::min<int64_t>(500, (first + count) * k - c));
      captions.push_back(model.encode_captions(b.ids, b.mask));
    }
    std::vector<int64_t> rows(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) rows[i] = first + i;
    Var images = model.encode_images(constant(feature_rows(set, rows)));
    return model.errors(concat(captions, 0), images).value();
  });
  double loss = 0.0;
  int64_t batches = 0;
  for (int64_t first = 0; first + 1 < n; first += batch, ++batches) {
    const int64_t count = std::min(batch, n - first);  // ≥ 2: one pair has no negatives
    std::vector<int64_t> images, captions;
    for (int64_t i = 0; i < count; ++i) images.push_back(first + i), captions.push_back((first + i) * k);
    PaddedBatch b = pad_batch(set.captions, captions);
    loss += model.loss(b.ids, b.mask, constant(feature_rows(set, images))).item();
  }
  return {.loss = loss / static_cast<double>(std::max<int64_t>(batches, 1)), .fields = scores.fields(),
          .score = scores.rsum()};
}

int train(int argc, char** argv) {
  OeConfig cfg;
  CLI::App app{"Image–caption retrieval with order-embeddings (Vendrov et al. 2016; Zhang & Sennrich 2019, Table 7)"};
  add_oe_flags(app, cfg);
  if (auto exit_code = parse_flags(app, argc, argv)) return *exit_code;
  check(cfg.features.empty() == cfg.captions.empty(),
        "--features and --captions go together (both empty: the "
        "synthetic task)");

  cfg.run.inputs = run_inputs(app, {"--features", "--captions"});
  Run run(cfg.run, run_settings(app));
  CaptionCorpus corpus = cfg.features.empty()
                             ? synthetic_corpus(cfg.synthetic_images, cfg.synthetic_dim, 5, cfg.run.seed + 100)
                             : read_corpus(cfg.features, cfg.captions, cfg.captions_per_image);
  run.note(corpus.description);
  Splits splits = split_corpus(corpus, cfg.min_count);
  run.note(splits.description);
  auto fingerprint = [](const char* name, const RetrievalSet& set) {
    return DataFingerprint{name, set.num_images(), content_hash(set.features) ^ content_hash(set.captions)};
  };
  run.check_same_data({fingerprint("training images", splits.train), fingerprint("validation images", splits.valid),
                       fingerprint("test images", splits.test)});
  check(splits.train.num_images() >= 2 && splits.valid.num_images() >= 2,
        "order_embedding: {} images are too few to split (need at least 2 for training and 2 for validation)",
        corpus.num_images());

  Generator init_gen(cfg.run.seed);
  OrderEmbeddingModel model(oe::model_options(cfg, splits.vocab.size(), corpus.features.dim(1)), init_gen);
  run.note(fmt::format("order-embedding model, {} parameters, norm {}, {} similarity, margin {}",
                       model.parameter_count(), norm_name(cfg.norm.kind), cfg.method, model.margin()));

  std::vector<int64_t> lengths;
  for (const auto& c : splits.train.captions) lengths.push_back(static_cast<int64_t>(c.size()));
  BatchCursor cursor(distinct_image_batches(lengths, splits.train.captions_per_image, cfg.batch), cfg.run.seed + 1);
  AdamOptions adam_options = cfg.kRecipe.adam;
  adam_options.lr = cfg.lr;
  Adam adam(model.named_parameters(), adam_options);
  run.note(fmt::format("{} steps of up to {} pairs ({} per epoch); Adam lr {}; per-parameter clip {}", cfg.training.steps,
                       cfg.batch, cursor.batches_per_epoch(), cfg.lr, cfg.training.clip));

  Trainer trainer(run, model, adam, cfg.training);
  trainer.keep(cursor);
  dist::ProcessGroup& group = dist::ProcessGroup::world();
  trainer.start();
  if (trainer.due_for_validation()) trainer.validate(evaluate(model, splits.valid, cfg.fold_images, cfg.batch));
  while (trainer.running()) {
    const Batch& batch = cursor.next();
    // Under mpirun each process encodes its share of the pairs; the loss
    // compares them with every pair of the batch (dist/gather_rows.h).
    const dist::BatchShare share = dist::batch_share(group, static_cast<int64_t>(batch.size()));
    PaddedBatch captions = pad_batch(splits.train.captions, batch);
    if (!share.whole()) captions = batch_columns(captions, share.first, share.rows);
    std::vector<int64_t> images;
    for (int64_t i = share.first; i < share.end(); ++i) images.push_back(batch[i] / splits.train.captions_per_image);
    trainer.step(model.loss(captions.ids, captions.mask, constant(feature_rows(splits.train, images)), share, group));
    if (trainer.due_for_log()) trainer.log_train();
    if (trainer.due_for_validation()) trainer.validate(evaluate(model, splits.valid, cfg.fold_images, cfg.batch));
  }
  // The selected model on the test images. (Its validation scores are on the
  // valid line of its step; logging them again here would put two points at
  // the last step of the validation curve.)
  if (trainer.due_for_test() && splits.test.num_images() >= 2) {
    const int64_t selected = trainer.load_best();
    run.note(fmt::format("the best model (step {}) on the test images", selected));
    Evaluation test = evaluate(model, splits.test, cfg.fold_images, cfg.batch);
    test.fields.emplace_back("selected_step", static_cast<double>(selected));
    trainer.log_test({test.loss, test.fields});
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_polite_threads(argv);  // short OpenMP spins, for a machine shared with other jobs
  return run_main(argc, argv, train);
}
