// layers/module.h: a model's parts replaced by their dotted path or by their
// member, seen the same by forward, named_parameters, save, load, train/eval
// and a new optimizer; a norm of one's own built in place by NormOptions'
// factory; the errors that name what is wrong.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/mlp.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/layers/save_load.h"
#include "rmsgrad/layers/sequential.h"
#include "rmsgrad/models/llama.h"
#include "rmsgrad/optim/adam.h"
#include "test_util.h"

using namespace rg;

namespace {

// A norm of one's own: x / (mean |x| + ε) · scale, with a parameter named
// unlike any of the zoo's.
class MeanAbsNorm : public Norm {
 public:
  explicit MeanAbsNorm(int64_t features) { scale = register_parameter("scale", Tensor::full(Shape{features}, 2.0f)); }
  Var scale;

 protected:
  Var normalize(const Var& x) override {
    const int last = static_cast<int>(x.shape().rank()) - 1;
    return x / (mean(abs(x), last, /*keepdim=*/true) + 1e-5f) * scale;
  }
};

LlamaOptions small_llama(NormOptions norm = {.kind = NormKind::RMSNorm}) {
  return {.vocab = 11, .layers = 2, .model_size = 8, .heads = 2, .ffn_size = 16, .norm = norm};
}

std::vector<std::string> names_of(const Module& m) {
  std::vector<std::string> names;
  for (const auto& [name, _] : m.named_parameters()) names.push_back(name);
  return names;
}

// The error f throws says every one of `parts`.
void check_error_says(const std::function<void()>& f, const std::vector<std::string>& parts) {
  const std::string message = test::error_of(f);
  CAPTURE(message);
  for (const std::string& part : parts) CHECK(message.find(part) != std::string::npos);
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

Tensor logits_of(Llama& model) {
  NoGradGuard no_grad;
  return model.forward(Indices(Shape{1, 4}, {1, 2, 3, 4})).value();
}

}  // namespace

TEST_CASE("set_submodule: the new norm is the one forward uses, trained, saved and loaded") {
  Generator gen(1);
  Llama model(small_llama(), gen);
  REQUIRE(has(names_of(model), "layers.0.norm1.gain"));
  const Tensor before = logits_of(model);

  model.set_submodule("layers.0.norm1", std::make_shared<MeanAbsNorm>(8));
  const std::vector<std::string> names = names_of(model);
  CHECK(has(names, "layers.0.norm1.scale"));
  CHECK_FALSE(has(names, "layers.0.norm1.gain"));
  CHECK(&model.get_submodule("layers.0.norm1") == (*model.layers)[0].norm1.get());  // the member holds it
  const Tensor after = logits_of(model);
  CHECK(max_abs_diff(before, after) > 1e-4);  // forward changed with it

  // An optimizer made now updates the new norm's parameter.
  Adam adam(model.named_parameters(), AdamOptions{.lr = 0.1});
  Var loss = sum(model.forward(Indices(Shape{1, 4}, {1, 2, 3, 4})));
  loss.backward();
  adam.step();
  auto& norm = dynamic_cast<MeanAbsNorm&>(model.get_submodule("layers.0.norm1"));
  CHECK(norm.scale.value().data()[0] != doctest::Approx(2.0f));

  // Saved and loaded with it; a model of the original structure refuses the
  // file, naming the difference.
  test::TempDir dir("set_submodule");
  const std::string file = (dir.path / "swapped.safetensors").string();
  save(model, file);
  Generator gen2(2);
  Llama copy(small_llama(), gen2);
  check_error_says([&] { load(copy, file); }, {"layers.0.norm1"});
  copy.set_submodule("layers.0.norm1", std::make_shared<MeanAbsNorm>(8));
  load(copy, file);
  CHECK(max_abs_diff(logits_of(copy), logits_of(model)) == 0.0);

  // train()/eval() reach it, and a replacement takes its parent's mode.
  model.eval();
  CHECK_FALSE(model.get_submodule("layers.0.norm1").is_training());
  model.set_submodule("layers.1.norm2", std::make_shared<MeanAbsNorm>(8));
  CHECK_FALSE(model.get_submodule("layers.1.norm2").is_training());
}

TEST_CASE("assigning the member is the same replacement as set_submodule") {
  Generator gen(1);
  Llama model(small_llama(), gen);
  (*model.layers)[0].norm1 = std::make_shared<MeanAbsNorm>(8);
  const std::vector<std::string> names = names_of(model);
  CHECK(has(names, "layers.0.norm1.scale"));
  CHECK_FALSE(has(names, "layers.0.norm1.gain"));
  // Set to nothing, the model says where instead of training without it.
  (*model.layers)[1].norm2 = nullptr;
  check_error_says([&] { model.named_parameters(); }, {"layers.1.norm2", "is null"});
}

TEST_CASE("set_submodule and get_submodule: errors name the path and what is there") {
  Generator gen(1);
  Llama model(small_llama(), gen);
  check_error_says([&] { model.set_submodule("layers.0.norm1", std::make_shared<Linear>(8, 8)); },
                   {"layers.0.norm1", "rg::Norm", "rg::Linear"});
  check_error_says([&] { model.get_submodule("layers.7.norm1"); }, {"no submodule '7'", "0, 1"});
  check_error_says([&] { model.set_submodule("layers.0.nrm1", std::make_shared<MeanAbsNorm>(8)); },
                   {"'layers.0'", "no submodule 'nrm1'", "norm1"});
  check_error_says([&] { model.set_submodule("norm", nullptr); }, {"set_submodule('norm')", "null"});
  // Sequential's layers are replaced by position, as nn.Sequential's.
  Sequential net{std::make_shared<Linear>(2, 3), std::make_shared<Linear>(3, 1)};
  net.set_submodule("1", std::make_shared<Linear>(3, 4));
  CHECK(net.forward(constant(Tensor::ones(Shape{5, 2}))).shape() == Shape{5, 4});
  CHECK(net[1].named_parameters().front().second.shape() == Shape{4, 3});
}

TEST_CASE("NormOptions::factory: every norm of a provided model is one's own, built in place") {
  const NormOptions own{.factory = [](int64_t n, NormLayout) { return std::make_shared<MeanAbsNorm>(n); }};
  Generator gen(1);
  Llama model(small_llama(own), gen);
  int scales = 0;
  for (const std::string& name : names_of(model)) {
    CHECK(name.find(".gain") == std::string::npos);
    scales += name.ends_with(".scale");
  }
  CHECK(scales == 2 * 2 + 1);  // two norms per block, and the final one
  MLP mlp(2, {4, 4}, 1, MLPOptions{.norm = own});
  CHECK(has(names_of(mlp), "1.scale"));  // Linear, then the norm, by position
  const NormOptions empty{.factory = [](int64_t, NormLayout) { return std::shared_ptr<Norm>(); }};
  check_error_says([&] { make_norm(empty, 4); }, {"make_norm", "factory returned nothing"});
}
