// The timed step is the trained step: each model's benchmark step
// (bench/model_steps, what bench_step times) and the same model trained by
// the Trainer with its driver's settings take the same three steps — the same
// losses in metrics.jsonl and the same parameters, bit for bit. Both read the
// model's recipe (experiments/common/recipes.h); a bench or a driver that
// wrote its own learning rate, clip or Adam constants would differ here.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/experiments/attentive_reader/reader_config.h"
#include "rmsgrad/experiments/cifar10/cifar_config.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/train/trainer.h"
#include "rmsgrad/experiments/order_embedding/oe_config.h"
#include "rmsgrad/optim/adam.h"
#include "test_util.h"

using namespace rg;

namespace {

// Each model small enough to train in a moment; the settings not named here
// are the recipe's.
std::vector<std::string> small_sizes(const std::string& model) {
  if (model == "rnnsearch") return {"batch=4", "src_len=6", "tgt_len=5", "vocab=40", "embed=12", "hidden=10"};
  if (model == "transformer")
    return {"batch=4", "src_len=6", "tgt_len=5", "vocab=40", "d=16", "ffn=24", "heads=2", "layers=1"};
  if (model == "reader")
    return {"batch=4", "doc_len=12", "query_len=10", "vocab=40", "embed=12", "hidden=10", "candidates=3"};
  if (model == "order_embedding") return {"batch=6", "hidden=12", "vocab=40", "word_dim=8", "image_dim=10"};
  if (model == "lm") return {"batch=3", "context=6", "vocab=20", "d=16", "ffn=24", "heads=2", "layers=2"};
  return {"batch=4", "width=0.05"};  // convpool
}

// What the model's driver gives its Adam and its Trainer: its flags'
// defaults (the driver's config, or for the translation and language-model
// drivers, which fill theirs in main, the recipe they fill it from).
struct DriverSettings {
  AdamOptions adam;
  TrainingOptions training;
};

DriverSettings driver_settings(const std::string& model, NormKind norm) {
  DriverSettings d;
  if (model == "rnnsearch") {
    const RNNSearchRecipe recipe;
    d.adam = recipe.adam;
    d.training.clip = recipe.clip.clip;
  } else if (model == "transformer") {
    const TransformerRecipe recipe;
    d.adam = recipe.adam;
    d.training.clip = recipe.clip.clip;
  } else if (model == "lm") {
    const LanguageModelRecipe recipe;
    d.adam = recipe.adam;
    d.training.clip = recipe.clip.clip;
  } else if (model == "reader") {
    const reader::ReaderConfig cfg;
    d.adam = cfg.kRecipe.adam;
    d.adam.lr = cfg.lr;
    d.training = cfg.training;
  } else if (model == "order_embedding") {
    const oe::OeConfig cfg;
    d.adam = cfg.kRecipe.adam;
    d.adam.lr = cfg.lr;
    d.training = cfg.training;
  } else {
    const cifar::CifarConfig cfg;
    d.adam = cfg.kRecipe.adam;
    d.adam.lr = cfg.kRecipe.lr(norm);
    d.training = cfg.training;
  }
  return d;
}

std::vector<double> train_losses(const std::string& metrics_path) {
  std::vector<double> losses;
  std::ifstream in(metrics_path);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["split"] == "train") losses.push_back(j["loss"].get<double>());
  }
  return losses;
}

}  // namespace

TEST_CASE("the bench step and the driver's Trainer take the same step") {
  set_num_threads(1);
  for (const std::string model : {"rnnsearch", "transformer", "reader", "order_embedding", "convpool", "lm"}) {
    CAPTURE(model);
    const NormOptions norm{.kind = NormKind::RMSNorm, .impl = NormImpl::Fused};
    bench::Sizes bench_sizes, driver_sizes;
    for (const std::string& s : small_sizes(model)) {
      bench_sizes.set(s);
      driver_sizes.set(s);
    }
    // Two copies of the model and its batch, from the same seeds.
    auto timed = bench::make_model_step(model, norm, bench_sizes);
    auto trained = bench::make_model_step(model, norm, driver_sizes);

    test::TempDir dir("recipes_" + model);
    Run run(RunOptions{.threads = 1, .out = dir.file("run"), .log_every = 1});
    DriverSettings settings = driver_settings(model, norm.kind);
    settings.training.steps = 3;
    settings.training.eval_every = 3;
    Adam adam(trained->model().named_parameters(), settings.adam);
    Trainer trainer(run, trained->model(), adam, settings.training);
    trainer.start();

    std::vector<double> bench_losses;
    while (trainer.running()) {
      timed->run();
      bench_losses.push_back(timed->loss());
      trainer.step(trained->batch_loss());
      if (trainer.due_for_log()) trainer.log_train();
    }
    CHECK(train_losses(dir.file("run/metrics.jsonl")) == bench_losses);
    REQUIRE(bench_losses.size() == 3);

    auto a = timed->model().named_parameters(), b = trained->model().named_parameters();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(a[i].first);
      const Tensor& x = a[i].second.value();
      const Tensor& y = b[i].second.value();
      REQUIRE(x.numel() == y.numel());
      CHECK(std::memcmp(x.data(), y.data(), sizeof(float) * static_cast<size_t>(x.numel())) == 0);
    }
  }
}
