// The order-embedding experiment: the fused order-violation op and the
// contrastive loss against PyTorch (tests/reference/order_embedding.json,
// written by tests/reference/make_order_embedding_refs.py) and by gradient
// checks; the retrieval metrics on matrices worked out by hand; the caption
// readers, the split and the batches; the driver end to end (learning, exact
// resume, clear errors); and the real Multi30k data when ../shared is there.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/npy.h"
#include "rmsgrad/experiments/order_embedding/caption_data.h"
#include "rmsgrad/experiments/order_embedding/retrieval.h"
#include "rmsgrad/models/order_embedding.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;
using namespace rg::oe;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Tensor T(const json& j) { return test::tensor_from_json(j); }

using test::error_of;
using test::metric_lines;
using test::TempDir;

void write_text(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

// Runs the driver; returns its exit code and leaves stdout+stderr in `output`.
int run_driver(const std::string& args, const fs::path& dir, std::string& output) {
  return test::run_program(RG_ORDER_EMBEDDING_BIN, args, dir, output);
}


}  // namespace

// Float32 against float64 references: each output is a sum of at most 13
// squares of O(1) numbers, each gradient a sum of at most 7·13 products, so
// the float32 rounding is a few 1e-7 relative; 1e-5 leaves a margin of ~10×
// and still catches any wrong term (the smallest terms are ~1e-3).
TEST_CASE("order_violation matches PyTorch, values and gradients") {
  const json ref = test::load_reference("order_embedding.json");
  for (const json& c : ref.at("violation")) {
    CAPTURE(c.at("name").get<std::string>());
    Var s(T(c["s"]), true), im(T(c["im"]), true);
    Var e = order_violation(s, im);
    test::all_close(e.value(), T(c["out"]), 1e-5f, 1e-5f, "out");
    tape().backward(e, T(c["r"]));
    test::all_close(s.grad(), T(c["grad_s"]), 1e-5f, 1e-5f, "grad_s");
    test::all_close(im.grad(), T(c["grad_im"]), 1e-5f, 1e-5f, "grad_im");
    tape().clear();
  }
}

TEST_CASE("order_violation passes a gradient check and equals its composition from broadcast ops") {
  Generator gen(3);
  // Entries on a grid of 0.1 apart, offsets by 0.05: no difference s − im is
  // within the check's step h = 1e-3 of the kink at 0.
  auto grid = [&](int64_t rows, int64_t cols, float offset) {
    Tensor t = Tensor::empty(Shape{rows, cols});
    for (float& v : t.span()) v = 0.1f * static_cast<float>(gen.randint(21) - 10) + offset;
    return t;
  };
  Tensor s = grid(5, 9, 0.05f), im = grid(4, 9, 0.0f);
  GradCheckResult result = gradcheck([](const std::vector<Var>& x) { return order_violation(x[0], x[1]); }, {s, im});
  CHECK_MESSAGE(result.ok, result.report);

  Var sv(s, true), imv(im, true), sc(s, true), imc(im, true);
  Var fused = order_violation(sv, imv);
  Var composed = sum(square(relu(reshape(sc, {5, 1, 9}) - reshape(imc, {1, 4, 9}))), 2);
  test::all_close(fused.value(), composed.value(), 1e-6f, 1e-6f, "fused vs composed");
  Tensor r = normal(Shape{5, 4}, 0.0f, 1.0f, gen);
  tape().backward(fused, r);
  tape().backward(composed, r);
  test::all_close(sv.grad(), sc.grad(), 1e-5f, 1e-5f, "grad s");
  test::all_close(imv.grad(), imc.grad(), 1e-5f, 1e-5f, "grad im");
  tape().clear();
  CHECK_THROWS_WITH_AS(order_violation(Var(Tensor::zeros(Shape{2, 3})), Var(Tensor::zeros(Shape{2, 4}))),
                       doctest::Contains("same D"), Error);
}

// The loss pipeline of the model: L2-normalise, |·| for order, the errors,
// the contrastive loss summed over both directions. Sums of up to 144 hinge
// terms of O(0.1) in float32: 2e-5 absolute on gradients of O(1).
TEST_CASE("the contrastive loss (order and cosine) matches PyTorch, value and gradients") {
  const json ref = test::load_reference("order_embedding.json");
  for (const json& c : ref.at("loss")) {
    CAPTURE(c.at("name").get<std::string>());
    const bool order = c["method"] == "order";
    const float eps = c["eps"].get<float>();
    Var s_raw(T(c["s_raw"]), true), im_raw(T(c["im_raw"]), true);
    Var s = l2_normalize_rows(s_raw, eps), im = l2_normalize_rows(im_raw, eps);
    if (order) s = abs(s), im = abs(im);
    Var errors = order ? order_violation(s, im) : neg(matmul(s, im, false, true));
    Var loss = contrastive_loss(errors, c["margin"].get<float>());
    const double want = c["loss"].get<double>();
    CHECK(loss.item() == doctest::Approx(want).epsilon(1e-5));
    loss.backward();
    test::all_close(s_raw.grad(), T(c["grad_s_raw"]), 2e-5f, 1e-4f, "grad_s_raw");
    test::all_close(im_raw.grad(), T(c["grad_im_raw"]), 2e-5f, 1e-4f, "grad_im_raw");
    tape().clear();
  }
}

TEST_CASE("the model: shapes, parameter names, and a loss that falls on a fixed batch") {
  OrderEmbeddingOptions options;
  options.vocab_size = 20;
  options.word_dim = 8;
  options.embed_dim = 12;
  options.image_dim = 10;
  options.norm.kind = NormKind::RMSNorm;
  Generator gen(5);
  OrderEmbeddingModel model(options, gen);
  std::set<std::string> names;
  for (const auto& [name, p] : model.named_parameters()) names.insert(name);
  CHECK(names.count("words.weight") == 1);
  CHECK(names.count("gru.cell.norm_h_gates.gain") == 1);
  CHECK(names.count("image_encoder.weight") == 1);
  CHECK(model.margin() == doctest::Approx(0.05f));

  // Four captions of lengths 3, 1, 4, 2 (time-major, 0 = padding).
  std::vector<std::vector<int32_t>> captions = {{4, 5, 6}, {7}, {8, 9, 10, 11}, {12, 13}};
  PaddedBatch b = pad_batch(captions, std::vector<int64_t>{0, 1, 2, 3});
  Tensor images = normal(Shape{4, 10}, 0.0f, 1.0f, gen);
  Var s = model.encode_captions(b.ids, b.mask);
  REQUIRE(s.shape() == Shape{4, 12});
  for (float v : s.value().span()) CHECK(v >= 0.0f);  // non-negative after |·|
  tape().clear();
  Adam adam(model.named_parameters(), AdamOptions{.lr = 1e-2});
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 30; ++step) {
    Var loss = model.loss(b.ids, b.mask, constant(images));
    (step == 0 ? first : last) = loss.item();
    adam.zero_grad();
    loss.backward();
    adam.step();
    tape().clear();
  }
  CHECK(last < 0.5 * first);
  // A padded caption encodes as the same caption alone: padding steps carry the state.
  PaddedBatch alone = pad_batch(captions, std::vector<int64_t>{1});
  NoGradGuard no_grad;
  Tensor together = model.encode_captions(b.ids, b.mask).value();
  Tensor single = model.encode_captions(alone.ids, alone.mask).value();
  for (int64_t d = 0; d < 12; ++d) CHECK(single.data()[d] == doctest::Approx(together.data()[12 + d]).epsilon(1e-6));
}

TEST_CASE("retrieval ranks and recalls, worked by hand") {
  // 3 images, 2 captions each (caption c → image c / 2). Errors [6, 3].
  Tensor e = Tensor::from(Shape{6, 3}, {0.1f, 0.5f, 0.9f,     // c0 (image 0): own image best → rank 0
                                        0.7f, 0.2f, 0.3f,     // c1 (image 0): two images ahead → rank 2
                                        0.4f, 0.4f, 0.8f,     // c2 (image 1): tie with image 0 → rank 1
                                        0.6f, 0.1f, 0.9f,     // c3 (image 1): rank 0
                                        0.5f, 0.6f, 0.2f,     // c4 (image 2): rank 0
                                        0.3f, 0.9f, 0.95f});  // c5 (image 2): rank 2
  CHECK(image_ranks(e, 2) == std::vector<int64_t>{0, 2, 1, 0, 0, 2});
  // Image 0: best own caption c0 (0.1); no wrong caption ≤ 0.1 → 0.
  // Image 1: best own c3 (0.1); wrong captions ≤ 0.1: none → 0.
  // Image 2: best own c4 (0.2); wrong captions ≤ 0.2 in column 2: none → 0.
  CHECK(caption_ranks(e, 2) == std::vector<int64_t>{0, 0, 0});
  RecallStats s = recall_stats(image_ranks(e, 2));
  CHECK(s.r1 == doctest::Approx(50.0));
  CHECK(s.r5 == doctest::Approx(100.0));
  CHECK(s.med_r == doctest::Approx(1.0));  // median of {0,0,0,1,2,2} = 0.5 → ⌊0.5⌋ + 1
  CHECK(s.mean_r == doctest::Approx(1.0 + 5.0 / 6.0));

  // Every pair equally good: ties count against the model, so it ranks last.
  Tensor flat = Tensor::zeros(Shape{6, 3});
  CHECK(recall_stats(image_ranks(flat, 2)).r1 == 0.0);
  CHECK(recall_stats(caption_ranks(flat, 2)).r1 == 0.0);
  CHECK(caption_ranks(flat, 2) == std::vector<int64_t>{4, 4, 4});

  // Folds: 5 images in folds of 2 → 2 folds of 2 and 3 images.
  std::vector<std::pair<int64_t, int64_t>> folds;
  RetrievalScores scores = fold_scores(5, 1, 2, [&](int64_t first, int64_t count) {
    folds.emplace_back(first, count);
    Tensor perfect = Tensor::full(Shape{count, count}, 1.0f);
    for (int64_t i = 0; i < count; ++i) perfect.data()[i * count + i] = 0.0f;
    return perfect;
  });
  CHECK(folds == std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {2, 3}});
  CHECK(scores.rsum() == doctest::Approx(300.0));
  CHECK_THROWS_WITH_AS(image_ranks(Tensor::zeros(Shape{5, 3}), 2), doctest::Contains("[N·K captions, N images]"),
                       Error);
}

TEST_CASE("captions: words, the two file layouts, the split, and clear errors") {
  CHECK(caption_words("A man's HAT, äpfel!") == std::vector<std::string>{"a", "man", "s", "hat", "äpfel"});
  TempDir tmp("captions");
  Tensor features = Tensor::from(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  write_npy((tmp.path / "f.npy").string(), features);
  write_text(tmp.path / "c1.txt", "a dog\na cat\na cow\n");
  write_text(tmp.path / "c2.txt", "one dog\none cat\none cow\n");
  CaptionCorpus two =
      read_corpus((tmp.path / "f.npy").string(), {(tmp.path / "c1.txt").string(), (tmp.path / "c2.txt").string()}, 5);
  CHECK(two.captions_per_image == 2);
  CHECK(two.captions == std::vector<std::string>{"a dog", "one dog", "a cat", "one cat", "a cow", "one cow"});
  write_text(tmp.path / "all.txt", "a dog\none dog\na cat\none cat\na cow\none cow\n");
  CaptionCorpus one = read_corpus((tmp.path / "f.npy").string(), {(tmp.path / "all.txt").string()}, 2);
  CHECK(one.captions == two.captions);

  std::string message =
      error_of([&] { read_corpus((tmp.path / "f.npy").string(), {(tmp.path / "all.txt").string()}, 3); });
  CHECK(message.find("all.txt: 6 lines") != std::string::npos);
  CHECK(message.find("need 9") != std::string::npos);
  write_text(tmp.path / "short.txt", "a dog\na cat\n");
  message = error_of([&] {
    read_corpus((tmp.path / "f.npy").string(), {(tmp.path / "c1.txt").string(), (tmp.path / "short.txt").string()}, 5);
  });
  CHECK(message.find("short.txt: 2 lines") != std::string::npos);
  CHECK(message.find("has 3 images") != std::string::npos);
  write_text(tmp.path / "empty.txt", "a dog\n ... \na cow\n");
  message = error_of([&] {
    read_corpus((tmp.path / "f.npy").string(), {(tmp.path / "c1.txt").string(), (tmp.path / "empty.txt").string()}, 5);
  });
  CHECK(message.find("empty.txt:2: caption has no word") != std::string::npos);
  message = error_of([&] { read_corpus((tmp.path / "f.npy").string(), {(tmp.path / "nope.txt").string()}, 1); });
  CHECK(message.find("nope.txt") != std::string::npos);
  write_text(tmp.path / "bad.npy", "not numpy at all");
  message = error_of([&] { read_corpus((tmp.path / "bad.npy").string(), {(tmp.path / "c1.txt").string()}, 1); });
  CHECK(message.find("bad.npy") != std::string::npos);

  // The split: 25 images → valid {8, 18}, test {9, 19}, 21 for training.
  CaptionCorpus synthetic = synthetic_corpus(25, 16, 5, 7);
  Splits splits = split_corpus(synthetic, 1);
  CHECK(splits.train.num_images() == 21);
  CHECK(splits.valid.num_images() == 2);
  CHECK(splits.test.num_images() == 2);
  CHECK(splits.valid.captions.size() == 10);
  CHECK(splits.valid.features.data()[0] == synthetic.features.data()[8 * 16]);
  CHECK(splits.test.features.data()[16] == synthetic.features.data()[19 * 16]);
  // Deterministic by seed, different across seeds.
  CHECK(synthetic_corpus(25, 16, 5, 7).captions == synthetic.captions);
  CHECK(synthetic_corpus(25, 16, 5, 8).captions != synthetic.captions);
}

TEST_CASE("batches: every caption once per epoch, no image twice in a batch") {
  const int64_t images = 37, k = 5, batch = 8;
  std::vector<int64_t> lengths;
  for (int64_t c = 0; c < images * k; ++c) lengths.push_back(3 + c % 7);
  EpochPlanner planner = distinct_image_batches(lengths, k, batch);
  Generator gen(11);
  EpochPlan plan = planner(gen);
  std::multiset<int64_t> seen;
  for (const Batch& b : plan) {
    CHECK(b.size() >= 2);
    CHECK(static_cast<int64_t>(b.size()) <= batch);
    std::set<int64_t> in_batch;
    for (int64_t c : b) {
      seen.insert(c);
      in_batch.insert(c / k);
    }
    CHECK(in_batch.size() == b.size());
  }
  // 37 images per pass make 4 batches of 8 and one of 5: nothing dropped.
  CHECK(seen.size() == static_cast<size_t>(images * k));
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == static_cast<size_t>(images * k));
}

TEST_CASE("order_embedding driver: learns the synthetic task, and --resume repeats the losses bit for bit") {
  TempDir tmp("driver");
  const std::string common =
      "--embed-dim 32 --word-dim 16 --synthetic-images 300 --synthetic-dim 32 --batch 32 "
      "--lr 0.01 --threads 1 --log-every 1 --eval-every 10 --seed 2 --steps 40";
  std::string output;
  const fs::path straight = tmp.path / "straight", resumed = tmp.path / "resumed";
  REQUIRE_MESSAGE(run_driver(common + " --out " + straight.string(), tmp.path, output) == 0, output);
  std::vector<json> train = metric_lines(straight, "train"), valid = metric_lines(straight, "valid"),
                    test = metric_lines(straight, "test");
  REQUIRE(train.size() == 40);
  REQUIRE(valid.size() == 5);  // steps 0, 10, 20, 30, 40
  REQUIRE(test.size() == 1);
  for (const char* field : {"caption_r1", "caption_r5", "caption_r10", "caption_med_r", "caption_mean_r", "image_r1",
                            "image_r5", "image_r10", "image_med_r", "image_mean_r"}) {
    CHECK(valid.back()[field].is_number());
    CHECK(test.back()[field].is_number());
  }
  CHECK(train.back()["sec_per_1k_steps"].is_number());
  // 30 validation images: chance R@10 of image retrieval is 10/30 = 33%.
  CHECK(valid.front()["image_r10"].get<double>() < 60.0);
  CHECK(valid.back()["image_r10"].get<double>() > 80.0);
  CHECK(fs::exists(straight / "best.safetensors"));

  // Interrupted after step 25 (the checkpoint is from step 20), then resumed.
  REQUIRE_MESSAGE(run_driver(common + " --stop-after 25 --out " + resumed.string(), tmp.path, output) == 0, output);
  REQUIRE_MESSAGE(run_driver(common + " --resume --out " + resumed.string(), tmp.path, output) == 0, output);
  std::vector<json> again = metric_lines(resumed, "train");
  REQUIRE(again.size() == train.size());
  for (size_t i = 0; i < train.size(); ++i)
    CHECK_MESSAGE(again[i]["loss"].get<double>() == train[i]["loss"].get<double>(), "step " << i + 1);
  CHECK(metric_lines(resumed, "test").back()["image_r10"] == test.back()["image_r10"]);
}

TEST_CASE("order_embedding driver: bad input is one clear error and a non-zero exit") {
  TempDir tmp("errors");
  std::string output;
  CHECK(run_driver("--no-such-flag", tmp.path, output) == 2);
  CHECK(run_driver("--norm batchnorm", tmp.path, output) == 2);
  CHECK(run_driver("--features " + (tmp.path / "none.npy").string() + " --out " + (tmp.path / "r").string(), tmp.path,
                   output) == 1);
  CHECK(output.find("--features and --captions go together") != std::string::npos);
  write_text(tmp.path / "c.txt", "a dog\n");
  CHECK(run_driver("--features " + (tmp.path / "none.npy").string() + " --captions " + (tmp.path / "c.txt").string() +
                       " --out " + (tmp.path / "r").string(),
                   tmp.path, output) == 1);
  CHECK(output.find("none.npy") != std::string::npos);
  CHECK(output.find("error:") != std::string::npos);
}

TEST_CASE("the real Multi30k features and captions (../shared/data), when present") {
  const fs::path dir = fs::path(RG_SHARED_DATA_DIR) / "multi30k";
  const fs::path features = dir / "features" / "test_2016_flickr-resnet50-avgpool.npy";
  if (!fs::exists(features)) {
    MESSAGE("skipped: " << features.string() << " does not exist (a fresh clone without ../shared/data)");
    return;
  }
  std::vector<std::string> captions;
  for (int k = 1; k <= 5; ++k)
    captions.push_back((dir / "task2" / "raw" / fmt::format("test_2016.{}.en.gz", k)).string());
  CaptionCorpus corpus = read_corpus(features.string(), captions, 5);
  CHECK(corpus.num_images() == 1000);
  CHECK(corpus.features.dim(1) == 2048);
  CHECK(corpus.captions.size() == 5000);
  CHECK(corpus.captions[0] == "The man with pierced ears is wearing glasses and an orange hat.");
  Splits splits = split_corpus(corpus, 2);
  CHECK(splits.train.num_images() == 800);
  CHECK(splits.valid.num_images() == 100);
  CHECK(splits.test.num_images() == 100);
  MESSAGE("real Multi30k: vocabulary " << splits.vocab.size() << " words");
}

TEST_CASE("the processes' parts of the contrastive loss add up to the loss, gradient included") {
  Generator gen(9);
  const Tensor e = uniform(Shape{5, 5}, -0.3f, 0.3f, gen);
  Var whole(e.clone(), true);
  Var full = contrastive_loss(whole, 0.2f);
  full.backward();
  // Pairs [0, 3) and [3, 5), each part seeing its rows and its columns of the same E.
  Var split(e.clone(), true);
  Var total = constant(Tensor::zeros(Shape{1}));
  for (auto [first, rows] : {std::pair<int64_t, int64_t>{0, 3}, {3, 2}}) {
    std::vector<int32_t> mine;
    for (int64_t i = first; i < first + rows; ++i) mine.push_back(static_cast<int32_t>(i));
    total = total + reshape(contrastive_loss_part(index_select(split, 0, mine), index_select(split, 1, mine), first,
                                                  0.2f), {1});
  }
  Var part_sum = sum(total);
  part_sum.backward();
  CHECK(part_sum.item() == doctest::Approx(full.item()).epsilon(1e-6));
  for (int64_t i = 0; i < 25; ++i)
    CHECK(split.grad().data()[i] == doctest::Approx(whole.grad().data()[i]).epsilon(1e-6));
}
