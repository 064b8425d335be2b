#pragma once
// One training step of each of the paper's models on a fixed batch, for the
// benchmark programs: bench_step times one model alone (beside its PyTorch
// twin), bench_norm_impl times several norms and implementations of one model
// against each other, bench_memory measures what a step holds.
//
//   Sizes sizes;                          // the model's defaults: its recipe (experiments/common/recipes.h)
//   sizes.set("batch=32");                // --set batch=32
//   auto step = make_model_step("rnnsearch", {.kind = NormKind::RMSNorm, .impl = NormImpl::Composed}, sizes);
//   step->run();                          // forward, then the drivers' TrainingStep: backward, clip, update
//   step->loss();                         // the loss of that step
//
// Every allocation outside the forward and backward passes is in a named
// ObserverScope (core/observer.h), a tag for bench_memory's accounting
// (bench/allocation_accounting.h): "parameters", "inputs", and "optimizer
// state" for the update (Adam allocates its moments on its first step).
//
// Each model is built by its driver's own function from the driver's
// settings (experiments/*/..._config.h, translation_models.h), with the
// recipe's defaults and the norm given, so that the timed model is the
// trained one.
//
// Every model draws its parameters and its batch from fixed seeds, so two
// steps built with different norms see the same batch, and the same model
// built twice starts from the same weights. The batch is built once; every
// step trains on it again (only the time is of interest).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/profiling.h"
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/observer.h"
#include "rmsgrad/dist/gradient_reducer.h"
#include "rmsgrad/experiments/common/recipes.h"
#include "rmsgrad/train/training_step.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/models/seq2seq.h"

namespace rg::bench {

// Named sizes and settings of a benchmark model ("batch", "hidden", "width",
// "method", ...). A model reads each one with its own default; set() overrides
// it; a key set but never read is a mistake and check_all_read() says so.
class Sizes {
 public:
  void set(const std::string& assignment);  // "key=value"
  int64_t integer(const std::string& key, int64_t fallback);
  double real(const std::string& key, double fallback);
  float real(const std::string& key, float fallback);
  std::string text(const std::string& key, const std::string& fallback);
  void check_all_read(std::string_view model) const;
  // Every key read so far with the value used, in the order read, as JSON
  // members ending in ", ".
  std::string json() const;

 private:
  std::string read(const std::string& key, const std::string& fallback, bool quoted);
  template <class Real>
  Real read_real(const std::string& key, Real fallback);
  std::map<std::string, std::string> overrides_;
  std::vector<std::pair<std::string, std::string>> used_;  // key → JSON value
};

// A recipe's optimizer and clip (experiments/common/recipes.h), each setting
// overridable with --set: lr, beta1, beta2, eps; clip, and clip_norm
// ("global" or "per_parameter").
AdamOptions read_adam(Sizes& sizes, AdamOptions recipe);
ClipOptions read_clip(Sizes& sizes, ClipOptions recipe);

class ModelStep {
 public:
  virtual ~ModelStep() = default;
  // The forward pass: the loss of the model's batch, on the tape.
  virtual Var batch_loss() = 0;
  // One training step on the batch: batch_loss(), then the drivers'
  // TrainingStep (take_step); clears the tape. Under bf16 products the
  // weights are rounded once for the step, as the Trainer does.
  void run();
  virtual Module& model() = 0;
  // A new batch of `batch` sequences of up to `first` and `second` tokens
  // (RNNSearch: source and target; reader: document and query), for runs
  // whose shapes vary as real batches do. The other models throw.
  virtual void reshape(int64_t batch, int64_t first, int64_t second);
  // The model's checks against its PyTorch and JAX twins: parameters, batch
  // and one backward's gradients written to dir (RNNSearch, the Transformer
  // and ConvPool-CNN-C).
  virtual void dump(const std::string& dir);
  double loss() const { return loss_; }

  // Under mpirun: backward sums the gradients over the processes in buckets
  // (dist/gradient_reducer.h), as the trainer does; each process's batch is
  // its share (bench_step's --set batch=… per process).
  void enable_data_parallel(dist::ProcessGroup& group, int64_t bucket_bytes);
  const dist::GradientReducer* reducer() const { return distributed_ ? &training_step_->reducer() : nullptr; }

 protected:
  // The step the drivers train with (train/training_step.h): Adam
  // with the recipe's clip; call once the model exists.
  void use_adam(const AdamOptions& adam, ClipOptions clip);
  // One step on `loss`: the TrainingStep's parts, each a phase of an
  // OpProfile (bench/profiling.h: "backward bookkeeping",
  // "optimizer"), the update in the scope "optimizer state". Sets loss().
  void take_step(const Var& loss);

 private:
  double loss_ = 0.0;
  std::unique_ptr<Adam> optimizer_;
  ClipOptions clip_;
  bool distributed_ = false;
  std::unique_ptr<TrainingStep> training_step_;
};

inline constexpr std::string_view kModelNames = "rnnsearch|transformer|reader|order_embedding|convpool|lm";
std::unique_ptr<ModelStep> make_model_step(std::string_view model, const NormOptions& norm, Sizes& sizes);

// ---- batches shared by the text models ----

// Time-major token ids [T, B] with T the longest length, and the mask [T, B]
// (1 on the first lengths[b] steps of column b). Ids are uniform in
// [4, vocab); with eos ≥ 0 the last real token of each sentence is eos.
struct TokenBatch {
  Indices ids;
  Tensor mask;
};
TokenBatch random_tokens(const std::vector<int64_t>& lengths, int64_t vocab, Generator& gen, int32_t eos = -1);

// The end-of-sentence id of the translation benchmarks' batches (SentencePiece's </s>).
inline constexpr int32_t kEos = 3;

// The translation benchmarks' sentence lengths: sentence b of a batch with
// longest length L has Lmin + (stride·b) mod (L − Lmin + 1) tokens, Lmin = max(1, L − 9).
std::vector<int64_t> sentence_lengths(int64_t max_len, int64_t batch, int64_t stride);

// For the twins' checks (dump): gains and biases start at exactly 1 and 0,
// which would hide a bias added in the wrong place or a gain applied to the
// wrong norm, so the check moves every vector parameter off its init by
// N(0, 0.1²) (generator 5).
void perturb_vector_parameters(Module& model);

// For the twins' checks (dump): ids as a float .npy, and a text file.
void write_ids(const std::string& path, const TokenBatch& s);
void write_text(const std::string& path, const std::string& text);

// A model's check for its twin, written to dir: params/<name>.npy, one
// backward of batch_loss()'s grads/<name>.npy, config.json (`config_json`,
// the model's settings) and result.json (loss, gradient norm, parameter
// count). Returns the loss and the gradient norm. The translation models'
// version writes their batch (source, target and their masks) too.
struct CheckResult {
  double loss = 0.0, grad_norm = 0.0;
};
CheckResult write_model_check(const std::string& dir, Module& model, const std::function<Var()>& batch_loss,
                              const std::string& config_json);
CheckResult write_translation_check(const std::string& dir, Seq2Seq& model, const TokenBatch& source,
                                    const TokenBatch& target, const std::string& config_json);

}  // namespace rg::bench
