#include "bench/model_steps/model_step.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <type_traits>

#include "bench/model_steps/convpool_step.h"
#include "bench/model_steps/lm_step.h"
#include "bench/model_steps/order_embedding_step.h"
#include "bench/model_steps/reader_step.h"
#include "bench/model_steps/translation_steps.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/npy.h"
#include "rmsgrad/optim/clip.h"

namespace rg::bench {

void Sizes::set(const std::string& assignment) {
  const size_t eq = assignment.find('=');
  check(eq != std::string::npos && eq > 0 && eq + 1 < assignment.size(),
        "--set takes key=value (e.g. batch=32), got '{}'", assignment);
  overrides_[assignment.substr(0, eq)] = assignment.substr(eq + 1);
}

std::string Sizes::read(const std::string& key, const std::string& fallback, bool quoted) {
  auto it = overrides_.find(key);
  const std::string value = it == overrides_.end() ? fallback : it->second;
  used_.emplace_back(key, quoted ? "\"" + value + "\"" : value);
  return value;
}

int64_t Sizes::integer(const std::string& key, int64_t fallback) {
  const std::string text = read(key, std::to_string(fallback), false);
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  check(end != text.c_str() && *end == '\0' && value > 0, "--set {}={}: expected a positive integer", key, text);
  return value;
}

// The fallback is written with a decimal point or an exponent always, so that
// JSON readers take it as a real; a float as the shortest text that reads back
// as it, and a float setting parsed as a float.
template <class Real>
Real Sizes::read_real(const std::string& key, Real fallback) {
  std::string number = fmt::format("{}", fallback);
  if (number.find_first_of(".e") == std::string::npos) number += ".0";
  const std::string text = read(key, number, false);
  char* end = nullptr;
  const Real value = std::is_same_v<Real, float> ? std::strtof(text.c_str(), &end) : std::strtod(text.c_str(), &end);
  check(end != text.c_str() && *end == '\0' && value >= 0, "--set {}={}: expected a non-negative number", key, text);
  return value;
}

double Sizes::real(const std::string& key, double fallback) { return read_real(key, fallback); }
float Sizes::real(const std::string& key, float fallback) { return read_real(key, fallback); }

std::string Sizes::text(const std::string& key, const std::string& fallback) { return read(key, fallback, true); }

void Sizes::check_all_read(std::string_view model) const {
  for (const auto& [key, value] : overrides_) {
    const bool read = std::any_of(used_.begin(), used_.end(), [&](const auto& kv) { return kv.first == key; });
    std::string known;
    for (const auto& [k, v] : used_) known += (known.empty() ? "" : ", ") + k;
    check(read, "--set {}: the {} model has no setting '{}' (it has {})", key, model, key, known);
  }
}

std::string Sizes::json() const {
  std::string out;
  for (const auto& [key, value] : used_) out += fmt::format("\"{}\": {}, ", key, value);
  return out;
}

AdamOptions read_adam(Sizes& sizes, AdamOptions recipe) {
  recipe.lr = sizes.real("lr", recipe.lr);
  recipe.beta1 = sizes.real("beta1", recipe.beta1);
  recipe.beta2 = sizes.real("beta2", recipe.beta2);
  recipe.eps = sizes.real("eps", recipe.eps);
  return recipe;
}

ClipOptions read_clip(Sizes& sizes, ClipOptions recipe) {
  recipe.clip = sizes.real("clip", recipe.clip);
  const std::string norm = sizes.text("clip_norm", recipe.clip_per_parameter ? "per_parameter" : "global");
  check(norm == "global" || norm == "per_parameter", "--set clip_norm={}: expected global or per_parameter", norm);
  recipe.clip_per_parameter = norm == "per_parameter";
  return recipe;
}

void ModelStep::reshape(int64_t, int64_t, int64_t) {
  throw Error("bench: only the rnnsearch and reader models take batches of other lengths");
}

void ModelStep::dump(const std::string&) {
  throw Error("--dump: only the rnnsearch, transformer and convpool models write a check for their twins");
}

std::unique_ptr<ModelStep> make_model_step(std::string_view model, const NormOptions& norm, Sizes& sizes) {
  std::unique_ptr<ModelStep> step;
  if (model == "rnnsearch") step = std::make_unique<RnnSearchStep>(norm, sizes);
  else if (model == "reader") step = std::make_unique<ReaderStep>(norm, sizes);
  else if (model == "order_embedding") step = std::make_unique<OrderEmbeddingStep>(norm, sizes);
  else if (model == "convpool") step = std::make_unique<ConvPoolStep>(norm, sizes);
  else if (model == "transformer") step = std::make_unique<TransformerStep>(norm, sizes);
  else if (model == "lm") step = std::make_unique<LanguageModelStep>(norm, sizes);
  else throw Error(fmt::format("unknown model '{}' (expected {})", model, kModelNames));
  sizes.check_all_read(model);
  return step;
}

TokenBatch random_tokens(const std::vector<int64_t>& lengths, int64_t vocab, Generator& gen, int32_t eos) {
  ObserverScope scope("inputs");
  const int64_t batch = static_cast<int64_t>(lengths.size());
  const int64_t steps = *std::max_element(lengths.begin(), lengths.end());
  std::vector<int32_t> ids(static_cast<size_t>(steps * batch), 0);
  Tensor mask = Tensor::zeros(Shape{steps, batch});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < lengths[b]; ++t) {
      const bool last = t + 1 == lengths[b];
      ids[t * batch + b] = eos >= 0 && last ? eos : 4 + static_cast<int32_t>(gen.randint(vocab - 4));
      mask.data()[t * batch + b] = 1.0f;
    }
  return {Indices(Shape{steps, batch}, std::move(ids)), mask};
}

std::vector<int64_t> sentence_lengths(int64_t max_len, int64_t batch, int64_t stride) {
  const int64_t low = std::max<int64_t>(1, max_len - 9);
  std::vector<int64_t> lengths(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) lengths[static_cast<size_t>(b)] = low + (stride * b) % (max_len - low + 1);
  return lengths;
}

void perturb_vector_parameters(Module& model) {
  Generator perturb(5);
  for (auto& [name, param] : model.named_parameters())
    if (param.rank() == 1) param.value().add_(normal(param.shape(), 0.0f, 0.1f, perturb));
}

void write_ids(const std::string& path, const TokenBatch& s) {
  Tensor t = Tensor::empty(s.mask.shape());
  for (size_t i = 0; i < s.ids.values.size(); ++i) t.data()[i] = static_cast<float>(s.ids.values[i]);
  write_npy(path, t);
}

void write_text(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "bench: cannot write {}", path);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

void ModelStep::use_adam(const AdamOptions& adam, ClipOptions clip) {
  optimizer_ = std::make_unique<Adam>(model().named_parameters(), adam);
  clip_ = clip;
  training_step_ = std::make_unique<TrainingStep>(model(), *optimizer_, clip);
}

void ModelStep::enable_data_parallel(dist::ProcessGroup& group, int64_t bucket_bytes) {
  check(optimizer_ != nullptr, "ModelStep: use_adam first");
  training_step_ = std::make_unique<TrainingStep>(model(), *optimizer_, clip_, group, bucket_bytes);
  distributed_ = group.distributed();
}

void ModelStep::run() {
  if (training_step_) training_step_->open_weight_cache();
  take_step(batch_loss());
}

void ModelStep::take_step(const Var& loss) {
  training_step_->backward(loss);
  profile_mark("backward bookkeeping");  // the pass's end: intermediate gradients released
  StepOutcome outcome;
  {
    ObserverScope scope("optimizer state");
    outcome = training_step_->update(loss);
  }
  profile_mark("optimizer");  // the clip, the finite check, the update and the gradients zeroed
  check(outcome.nonfinite.empty(), "bench: {} (the benchmark's batch is random; a bug)", outcome.nonfinite);
  loss_ = outcome.loss;
}

CheckResult write_model_check(const std::string& dir, Module& model, const std::function<Var()>& batch_loss,
                              const std::string& config_json) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  fs::create_directories(root / "params");
  fs::create_directories(root / "grads");
  for (const auto& [name, param] : model.named_parameters())
    write_npy((root / "params" / (name + ".npy")).string(), param.value());
  Var loss = batch_loss();
  model.zero_grad();
  loss.backward();
  const CheckResult result{loss.item(), grad_norm(model.named_parameters())};
  for (auto& [name, param] : model.named_parameters())
    write_npy((root / "grads" / (name + ".npy")).string(), param.grad());
  write_text((root / "config.json").string(), config_json);
  write_text((root / "result.json").string(),
             fmt::format("{{\"loss\": {:.9g}, \"grad_norm\": {:.9g}, \"parameters\": {}}}\n", result.loss,
                         result.grad_norm, model.parameter_count()));
  tape().clear();
  return result;
}

CheckResult write_translation_check(const std::string& dir, Seq2Seq& model, const TokenBatch& source,
                                    const TokenBatch& target, const std::string& config_json) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  fs::create_directories(root);
  write_ids((root / "source.npy").string(), source);
  write_ids((root / "target.npy").string(), target);
  write_npy((root / "source_mask.npy").string(), source.mask);
  write_npy((root / "target_mask.npy").string(), target.mask);
  return write_model_check(dir, model, [&] { return model.loss(source.ids, source.mask, target.ids, target.mask); },
                           config_json);
}

}  // namespace rg::bench
