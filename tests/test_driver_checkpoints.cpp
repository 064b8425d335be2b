// Every driver's checkpoint is the library's training state: rg::load reads
// the trained model out of <out>/best.safetensors (or checkpoint.safetensors,
// for the drivers that keep no best) into the driver's model class, built
// with the run's settings, and every parameter then equals the file's.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/experiments/translation/subword.h"
#include "rmsgrad/layers/save_load.h"
#include "rmsgrad/models/attentive_reader.h"
#include "rmsgrad/models/convpool_cnn.h"
#include "rmsgrad/models/order_embedding.h"
#include "rmsgrad/models/rnnsearch.h"
#include "rmsgrad/models/transformer.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

// Trains `binary` for a few steps into dir/run; returns the run directory.
fs::path train(const test::TempDir& dir, const std::string& binary, const std::string& args) {
  const fs::path run = dir.path / "run";
  std::string output;
  const int status = test::run_program(binary, args + " --norm rmsnorm --threads 1 --out " + run.string(), dir.path,
                                       output);
  REQUIRE_MESSAGE(status == 0, output);
  return run;
}

// load() must accept the file, and leave the model holding its parameters.
void check_loads(Module& model, const fs::path& file) {
  load(model, file.string());
  const Checkpoint saved = load_checkpoint(file.string());
  int64_t compared = 0;
  for (const auto& [name, parameter] : model.named_parameters()) {
    const Tensor* t = saved.find("param." + name);
    REQUIRE(t != nullptr);
    for (int64_t i = 0; i < t->numel(); ++i) REQUIRE(parameter.value().data()[i] == t->data()[i]);
    ++compared;
  }
  CHECK(compared > 0);
}

int64_t rows_of(const fs::path& file, const std::string& tensor) {
  const Checkpoint checkpoint = load_checkpoint(file.string());
  const Tensor* t = checkpoint.find(tensor);
  REQUIRE(t != nullptr);
  return t->dim(0);
}

const NormOptions kRmsNorm{.kind = NormKind::RMSNorm};

}  // namespace

TEST_CASE("cifar10: checkpoint.safetensors loads into ConvPoolCnnC") {
  test::TempDir dir("driver_checkpoint_cifar");
  const fs::path run = train(dir, RG_CIFAR10_BIN, "--width 0.125 --steps 2 --train-size 100 --valid-size 50 --batch 50");
  Generator init(1), noise(2);
  ConvPoolCnnC model({.norm = kRmsNorm, .width = 0.125}, init, noise);
  check_loads(model, run / "checkpoint.safetensors");
}

TEST_CASE("attentive_reader: checkpoint.safetensors loads into AttentiveReader") {
  test::TempDir dir("driver_checkpoint_reader");
  const fs::path run = train(dir, RG_ATTENTIVE_READER_BIN,
                             "--steps 2 --eval-every 2 --synthetic-questions 200 --embed 16 --hidden 16 --batch 8");
  const fs::path file = run / "checkpoint.safetensors";
  Generator init(1), noise(2);
  AttentiveReader model({.vocab_size = rows_of(file, "param.words.weight"), .embed_dim = 16, .hidden = 16,
                         .norm = kRmsNorm},
                        init, noise);
  check_loads(model, file);
}

TEST_CASE("order_embedding: best.safetensors loads into OrderEmbeddingModel") {
  test::TempDir dir("driver_checkpoint_oe");
  const fs::path run = train(dir, RG_ORDER_EMBEDDING_BIN,
                             "--steps 2 --eval-every 2 --synthetic-images 200 --synthetic-dim 32 --word-dim 16 "
                             "--embed-dim 32 --batch 16");
  const fs::path file = run / "best.safetensors";
  Generator init(1);
  OrderEmbeddingModel model({.vocab_size = rows_of(file, "param.words.weight"), .word_dim = 16, .embed_dim = 32,
                             .image_dim = 32, .norm = kRmsNorm},
                            init);
  check_loads(model, file);
}

TEST_CASE("rnnsearch: best.safetensors loads into RNNSearch") {
  test::TempDir dir("driver_checkpoint_rnnsearch");
  const fs::path run = train(dir, RG_RNNSEARCH_BIN,
                             "--steps 2 --eval-every 2 --synthetic-pairs 200 --embed 16 --hidden 16 --batch 16 "
                             "--valid-limit 5 --valid-beam 1 --beam 1");
  const int64_t vocab = Subword((run / "subword.model").string()).vocab_size();
  Generator init(1), noise(2);
  RNNSearchOptions options;
  options.source_vocab = options.target_vocab = vocab;
  options.embed = options.hidden = 16;
  options.norm = kRmsNorm;
  RNNSearch model(options, init, noise);
  check_loads(model, run / "best.safetensors");
}

TEST_CASE("transformer: best.safetensors loads into Transformer") {
  test::TempDir dir("driver_checkpoint_transformer");
  const fs::path run = train(dir, RG_TRANSFORMER_BIN,
                             "--steps 2 --eval-every 2 --synthetic-pairs 200 --model-size 32 --ffn 64 --heads 2 "
                             "--layers 1 --valid-limit 5 --valid-beam 1 --beam 1");
  const int64_t vocab = Subword((run / "subword.model").string()).vocab_size();
  Generator init(1), noise(2);
  TransformerOptions options;
  options.source_vocab = options.target_vocab = vocab;
  options.encoder_layers = options.decoder_layers = 1;
  options.layer.model_size = 32;
  options.layer.ffn_size = 64;
  options.layer.heads = 2;
  options.layer.norm = kRmsNorm;
  Transformer model(options, init, noise);
  check_loads(model, run / "best.safetensors");
}
