// The composed normalizations (autograd/composed_norm_ops.h) inside every
// model: each of the paper's models built twice from the same seed, once with
// the fused kernels and once with the norms composed from ops
// (NormOptions::impl), gives the same loss and the same gradient for every
// parameter. The op-level twins (every norm, both layouts, every gradient)
// are in test_norms.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "rmsgrad/models/attentive_reader.h"
#include "rmsgrad/models/convpool_cnn.h"
#include "rmsgrad/models/order_embedding.h"
#include "rmsgrad/models/rnnsearch.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

struct LossAndGrads {
  double loss = 0.0;
  std::vector<std::pair<std::string, Tensor>> grads;
};

// Builds a model with the given implementation, runs one forward and
// backward, and returns the loss and a copy of every parameter's gradient.
using Build = std::function<std::pair<std::shared_ptr<Module>, Var>(NormImpl)>;

LossAndGrads one_backward(const Build& build, NormImpl impl) {
  auto [model, loss] = build(impl);
  model->zero_grad();
  loss.backward();
  LossAndGrads out{loss.item(), {}};
  for (auto& [name, p] : model->named_parameters())
    out.grads.emplace_back(name, p.has_grad() ? p.grad().clone() : Tensor::zeros(p.shape()));
  tape().clear();
  return out;
}

// Fused and composed differ only in the order of float32 roundings inside
// each norm (≈ 1e-7 relative per row statistic), carried through a few
// layers and up to ~10 recurrent steps forward and back. Each parameter's
// gradient is compared as a whole, relative to its largest element:
// max |g_f − g_c| ≤ 2e-4 · max |g_f| + 1e-5 · G, G the largest gradient
// element of the whole model. The second term is for gradients that are
// zero in exact arithmetic, such as a bias right before a BatchNorm (the
// batch mean removes it): there both sides hold only the rounding residue of
// terms of the model's gradient scale that cancel. A wrong backward in any op
// of the chain gives errors of order 1 in that relation.
void check_same(const std::string& what, const Build& build) {
  INFO(what);
  const LossAndGrads fused = one_backward(build, NormImpl::Fused);
  const LossAndGrads composed = one_backward(build, NormImpl::Composed);
  CHECK(composed.loss == doctest::Approx(fused.loss).epsilon(1e-5));
  REQUIRE(fused.grads.size() == composed.grads.size());
  float model_scale = 0.0f;
  for (const auto& [name, f] : fused.grads)
    for (float v : f.span()) model_scale = std::max(model_scale, std::fabs(v));
  for (size_t i = 0; i < fused.grads.size(); ++i) {
    const auto& [name, f] = fused.grads[i];
    const Tensor& c = composed.grads[i].second;
    REQUIRE(composed.grads[i].first == name);
    float scale = 0.0f, diff = 0.0f;
    for (int64_t j = 0; j < f.numel(); ++j) {
      scale = std::max(scale, std::fabs(f.data()[j]));
      diff = std::max(diff, std::fabs(f.data()[j] - c.data()[j]));
    }
    CHECK_MESSAGE(diff <= 2e-4f * scale + 1e-5f * model_scale,
                  name << ": max difference " << diff << " against max " << scale << " (model " << model_scale << ")");
  }
}

// Time-major ids [T, B] uniform in [4, vocab) and a mask whose column b has
// T − (b mod 3) real steps.
std::pair<Indices, Tensor> tokens(int64_t steps, int64_t batch, int64_t vocab, Generator& gen) {
  std::vector<int32_t> ids(static_cast<size_t>(steps * batch));
  Tensor mask = Tensor::zeros(Shape{steps, batch});
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t b = 0; b < batch; ++b) {
      ids[t * batch + b] = 4 + static_cast<int32_t>(gen.randint(vocab - 4));
      mask.data()[t * batch + b] = t < steps - b % 3 ? 1.0f : 0.0f;
    }
  return {Indices(Shape{steps, batch}, ids), mask};
}

const std::vector<NormKind> kActivationNorms = {NormKind::LayerNorm, NormKind::RMSNorm, NormKind::PRMSNorm,
                                                NormKind::L2Norm};

}  // namespace

TEST_CASE("RNNSearch: fused and composed norms give the same loss and gradients") {
  for (NormKind kind : kActivationNorms) {
    check_same(norm_name(kind), [kind](NormImpl impl) {
      RNNSearchOptions o;
      o.source_vocab = o.target_vocab = 40;
      o.embed = 12;
      o.hidden = 16;
      o.norm = {.kind = kind, .p = 0.25f, .impl = impl};
      o.dropout = 0.2f;
      Generator init(1), noise(2), data(3);
      auto model = std::make_shared<RNNSearch>(o, init, noise);
      model->train();
      auto [src, src_mask] = tokens(7, 4, 40, data);
      auto [tgt, tgt_mask] = tokens(6, 4, 40, data);
      return std::pair<std::shared_ptr<Module>, Var>(model, model->loss(src, src_mask, tgt, tgt_mask));
    });
  }
}

TEST_CASE("attentive reader (LSTMs, attention): fused and composed norms agree, BatchNorm too") {
  std::vector<NormKind> kinds = kActivationNorms;
  kinds.push_back(NormKind::BatchNorm);
  for (NormKind kind : kinds) {
    check_same(norm_name(kind), [kind](NormImpl impl) {
      AttentiveReaderOptions o;
      o.vocab_size = 50;
      o.embed_dim = 10;
      o.hidden = 12;
      o.norm = {.kind = kind, .p = 0.25f, .impl = impl};
      o.dropout = 0.3f;
      Generator init(4), noise(5), data(6);
      auto model = std::make_shared<AttentiveReader>(o, init, noise);
      model->train();
      const int64_t batch = 3, k = 4;
      auto [doc, doc_mask] = tokens(9, batch, 50, data);
      auto [query, query_mask] = tokens(4, batch, 50, data);
      std::vector<int32_t> candidate_ids;
      for (int64_t i = 0; i < batch * k; ++i) candidate_ids.push_back(4 + static_cast<int32_t>(data.randint(46)));
      const Indices candidates(Shape{batch, k}, candidate_ids), answers(Shape{batch}, {0, 2, 1});
      const Tensor padding = Tensor::zeros(Shape{batch, k});
      const ReaderInputs in{doc, doc_mask, query, query_mask, candidates, padding};
      return std::pair<std::shared_ptr<Module>, Var>(model, model->loss(in, answers));
    });
  }
}

TEST_CASE("order-embedding model (caption GRU): fused and composed norms agree") {
  for (NormKind kind : kActivationNorms) {
    check_same(norm_name(kind), [kind](NormImpl impl) {
      OrderEmbeddingOptions o;
      o.vocab_size = 30;
      o.word_dim = 8;
      o.embed_dim = 16;
      o.image_dim = 10;
      o.norm = {.kind = kind, .p = 0.25f, .impl = impl};
      Generator gen(7), data(8);
      auto model = std::make_shared<OrderEmbeddingModel>(o, gen);
      auto [words, mask] = tokens(6, 5, 30, data);
      Var images = constant(normal(Shape{5, 10}, 0.0f, 1.0f, data));
      return std::pair<std::shared_ptr<Module>, Var>(model, model->loss(words, mask, images));
    });
  }
}

TEST_CASE("ConvPool-CNN-C (per-channel conv maps, dense layers): fused and composed norms agree") {
  std::vector<NormKind> kinds = kActivationNorms;
  kinds.push_back(NormKind::BatchNorm);
  for (NormKind kind : kinds) {
    check_same(norm_name(kind), [kind](NormImpl impl) {
      ConvPoolCnnOptions o;
      o.width = 0.0625;
      o.norm = {.kind = kind, .p = 0.125f, .eps = 1e-6f, .impl = impl};
      Generator init(9), noise(10), data(11);
      auto model = std::make_shared<ConvPoolCnnC>(o, init, noise);
      model->train();
      Var images = constant(normal(Shape{4, 3, 32, 32}, 0.0f, 1.0f, data));
      Var loss = cross_entropy((*model)(images), Indices({1, 7, 3, 0}));
      return std::pair<std::shared_ptr<Module>, Var>(model, loss);
    });
  }
}

TEST_CASE("composed norms: BatchNorm over conv maps, and clear errors") {
  Generator gen(12);
  Var x = parameter(normal(Shape{3, 4, 5, 5}, 0.5f, 2.0f, gen));
  Var g = parameter(uniform(Shape{4}, 0.5f, 1.5f, gen)), b = parameter(uniform(Shape{4}, -0.5f, 0.5f, gen));
  BatchNormState s1{Tensor::zeros(Shape{4}), Tensor::ones(Shape{4}), 0.1f, 1e-5f};
  BatchNormState s2{Tensor::zeros(Shape{4}), Tensor::ones(Shape{4}), 0.1f, 1e-5f};
  Tensor fused, composed;
  {
    NoGradGuard no_grad;
    fused = batch_norm(x, g, b, s1, true).value();
    composed = composed_batch_norm(x, g, b, s2, true).value();
  }
  float diff = 0.0f;
  for (int64_t i = 0; i < fused.numel(); ++i) diff = std::max(diff, std::fabs(fused.data()[i] - composed.data()[i]));
  CHECK(diff < 1e-5f);
  for (int64_t c = 0; c < 4; ++c) {
    CHECK(s2.running_mean.at({c}) == doctest::Approx(s1.running_mean.at({c})).epsilon(1e-5));
    CHECK(s2.running_var.at({c}) == doctest::Approx(s1.running_var.at({c})).epsilon(1e-5));
  }
  CHECK_THROWS_WITH_AS(composed_layer_norm(x, g, b, 1e-5f),
                       "layernorm (composed): gain [4] must be [5] for input [3, 4, 5, 5]", Error);
  CHECK_THROWS_WITH_AS(composed_rms_norm(constant(Tensor::zeros(Shape{2, 3})), g, Var(), {}, NormLayout::Channels),
                       "rmsnorm (composed): channel layout needs [N, C, H, W], got [2, 3]", Error);
  CHECK(parse_norm_impl("composed") == NormImpl::Composed);
  CHECK_THROWS_WITH_AS(parse_norm_impl("unfused"),
                       "unknown normalization implementation 'unfused' (expected fused or composed)", Error);
}
