// RNNSearch: the loss gradient against central differences through the whole
// model for every norm, padding that changes nothing, the decoding path
// (decode_step) agreeing with the training path (teacher forcing), and beam
// search: greedy is beam 1, a wider beam never finds a worse-scoring
// translation, and batching does not change a translation.
#include <doctest/doctest.h>

#include <cmath>

#include "rmsgrad/data/batching.h"
#include "rmsgrad/experiments/translation/beam_search.h"
#include "rmsgrad/experiments/translation/subword.h"
#include "rmsgrad/layers/init.h"
#include "rmsgrad/models/rnnsearch.h"
#include "rmsgrad/rmsgrad.h"
#include "rnnsearch_test_options.h"

using namespace rg;

namespace {

using test::tiny_rnnsearch_options;

// Two sentence pairs of different lengths, each ending in </s> (id 3).
struct TinyPairs {
  std::vector<std::vector<int32_t>> source = {{4, 5, 6, 7, 3}, {8, 9, 3}};
  std::vector<std::vector<int32_t>> target = {{4, 5, 3}, {6, 7, 8, 9, 3}};
  PaddedBatch src, tgt;
  TinyPairs() {
    src = pad_batch(source, Batch{0, 1});
    tgt = pad_batch(target, Batch{0, 1});
  }
};

// The log-probability the model gives to `words` followed by </s>, by teacher forcing.
double sequence_log_prob(RNNSearch& model, const std::vector<int32_t>& source, std::vector<int32_t> words) {
  NoGradGuard no_grad;
  words.push_back(kEosId);
  const std::vector<std::vector<int32_t>> sources{source}, targets{words};
  PaddedBatch src = pad_batch(sources, Batch{0}), tgt = pad_batch(targets, Batch{0});
  Var log_probs = log_softmax(model.logits(src.ids, src.mask, tgt.ids, tgt.mask), 1);
  const int64_t vocab = log_probs.dim(1);
  double total = 0.0;
  for (size_t t = 0; t < words.size(); ++t)
    total += log_probs.value().data()[static_cast<int64_t>(t) * vocab + words[t]];
  return total;
}

}  // namespace

TEST_CASE("the model's loss gradient matches central differences for every norm and every parameter") {
  // float32 through a BiGRU, the conditional GRU, attention and the softmax:
  // with h = 1e-2 the difference quotient carries ~1e-7·|L|/h ≈ 1e-4 of
  // rounding (L ≈ 10) and O(h²) ≈ 1e-4 of truncation; hence 2e-3 + 2%.
  for (NormKind norm : {NormKind::None, NormKind::LayerNorm, NormKind::RMSNorm, NormKind::PRMSNorm, NormKind::L2Norm,
                        NormKind::WeightNorm}) {
    Generator gen(21), noise(22);
    RNNSearchOptions options = tiny_rnnsearch_options(norm);
    options.norm.p = 0.5f;
    RNNSearch model(options, gen, noise);
    // Biases start at 0, and the decoder's first input is the zero vector, so
    // at the start a norm's input can be exactly 0, where x / RMS(x) has a
    // slope of 1/sqrt(ε) and no finite difference of size h means anything.
    // Random biases move every norm's input away from 0.
    Generator bias_gen(23);
    for (auto& [name, p] : model.named_parameters())
      if (name.ends_with("bias") || name.ends_with("bias_gates") || name.ends_with("bias_cand"))
        p.value().copy_from(init_normal(p.shape(), 0.5f, bias_gen));
    TinyPairs tiny;
    auto loss = [&] { return model.loss(tiny.src.ids, tiny.src.mask, tiny.tgt.ids, tiny.tgt.mask); };
    Var l = loss();
    for (auto& [name, p] : model.named_parameters()) p.zero_grad();
    l.backward();
    tape().clear();
    Generator pick(5);
    for (auto& [name, p] : model.named_parameters()) {
      const Tensor grad = p.grad().clone();
      for (int trial = 0; trial < 3; ++trial) {
        int64_t i = pick.randint(p.numel());
        // Embedding rows that the batch never looks up have zero gradient
        // both ways; pick a used row for the word tables.
        if (name == "source_words.weight") i = (4 + pick.randint(6)) * options.embed + pick.randint(options.embed);
        if (name == "target_words.weight") i = (4 + pick.randint(5)) * options.embed + pick.randint(options.embed);
        float* value = p.value().data() + i;
        const float saved = *value;
        const float h = 1e-2f;
        NoGradGuard no_grad;
        *value = saved + h;
        const double up = loss().item();
        *value = saved - h;
        const double down = loss().item();
        *value = saved;
        const double numeric = (up - down) / (2.0 * h), analytic = grad.data()[i];
        CHECK_MESSAGE(std::fabs(analytic - numeric) <= 2e-3 + 0.02 * std::fabs(numeric),
                      norm_name(norm) << " " << name << "[" << i << "]: analytic " << analytic << ", numeric "
                                      << numeric);
      }
    }
  }
}

TEST_CASE("padding changes nothing: a sentence's logits are the same alone and in a padded batch") {
  for (NormKind norm : {NormKind::None, NormKind::RMSNorm}) {
    Generator gen(3), noise(4);
    RNNSearch model(tiny_rnnsearch_options(norm), gen, noise);
    TinyPairs tiny;
    NoGradGuard no_grad;
    Var both = model.logits(tiny.src.ids, tiny.src.mask, tiny.tgt.ids, tiny.tgt.mask);
    const int64_t vocab = both.dim(1);
    for (int64_t b = 0; b < 2; ++b) {
      PaddedBatch src = pad_batch(tiny.source, Batch{b}), tgt = pad_batch(tiny.target, Batch{b});
      Var alone = model.logits(src.ids, src.mask, tgt.ids, tgt.mask);
      for (int64_t t = 0; t < tgt.time_steps(); ++t)
        for (int64_t v = 0; v < vocab; ++v)
          CHECK(alone.value().data()[t * vocab + v] ==
                doctest::Approx(both.value().data()[(t * 2 + b) * vocab + v]).epsilon(1e-5));
    }
  }
}

TEST_CASE("decode_step walks the same path as teacher forcing") {
  Generator gen(8), noise(9);
  RNNSearch model(tiny_rnnsearch_options(NormKind::LayerNorm), gen, noise);
  model.eval();
  TinyPairs tiny;
  NoGradGuard no_grad;
  Var forced = log_softmax(model.logits(tiny.src.ids, tiny.src.mask, tiny.tgt.ids, tiny.tgt.mask), 1);
  const int64_t vocab = forced.dim(1), batch = 2;
  SourceEncoding source = model.encode(tiny.src.ids, tiny.src.mask);
  std::vector<int32_t> previous(2, -1);
  Var state = source.initial_state;
  for (int64_t t = 0; t < tiny.tgt.time_steps(); ++t) {
    RNNSearch::StepOutput step = model.decode_step(source, previous, state);
    for (int64_t b = 0; b < batch; ++b) {
      if (tiny.tgt.mask.data()[t * batch + b] == 0.0f) continue;  // past this sentence's end
      for (int64_t v = 0; v < vocab; ++v)
        CHECK(step.log_probs.value().data()[b * vocab + v] ==
              doctest::Approx(forced.value().data()[(t * batch + b) * vocab + v]).epsilon(1e-5));
      previous[static_cast<size_t>(b)] = tiny.tgt.ids.values[static_cast<size_t>(t * batch + b)];
    }
    state = step.state;
  }
}

TEST_CASE("beam search: beam 1 is greedy, a wider beam scores at least as well, batching changes nothing") {
  Generator gen(31), noise(32);
  RNNSearchOptions options = tiny_rnnsearch_options(NormKind::RMSNorm, 0.8f);
  RNNSearch model(options, gen, noise);
  TinyPairs tiny;
  BeamOptions greedy{.beam = 1, .length_norm = 0.0f, .max_length_ratio = 2.0f, .max_length_extra = 4};
  std::vector<std::vector<int32_t>> by_beam = beam_search(model, tiny.src.ids, tiny.src.mask, greedy);
  REQUIRE(by_beam.size() == 2);

  // Greedy by hand: the argmax at every position until </s> or the length limit.
  for (size_t b = 0; b < 2; ++b) {
    NoGradGuard no_grad;
    PaddedBatch src = pad_batch(tiny.source, Batch{static_cast<int64_t>(b)});
    SourceEncoding source = model.encode(src.ids, src.mask);
    std::vector<int32_t> previous{-1}, words;
    Var state = source.initial_state;
    const size_t limit = 2 * tiny.source[b].size() + 4;
    while (words.size() < limit) {
      RNNSearch::StepOutput step = model.decode_step(source, previous, state);
      const float* lp = step.log_probs.value().data();
      const int32_t best = static_cast<int32_t>(std::max_element(lp, lp + options.target_vocab) - lp);
      if (best == kEosId) break;
      words.push_back(best);
      previous = {best};
      state = step.state;
    }
    CHECK(by_beam[b] == words);
  }

  // A wider beam, ranking by raw log-probability, never ends worse than greedy
  // on a sentence that greedy finished with </s>.
  BeamOptions wide = greedy;
  wide.beam = 4;
  std::vector<std::vector<int32_t>> widened = beam_search(model, tiny.src.ids, tiny.src.mask, wide);
  for (size_t b = 0; b < 2; ++b) {
    if (by_beam[b].size() >= 2 * tiny.source[b].size() + 4) continue;  // greedy stopped at the limit
    CHECK(sequence_log_prob(model, tiny.source[b], widened[b]) >=
          sequence_log_prob(model, tiny.source[b], by_beam[b]) - 1e-4);
  }

  // translate_all sorts by length and batches; the answers come back in order
  // and equal the sentences translated one by one.
  std::vector<std::vector<int32_t>> sources = {tiny.source[0], tiny.source[1], {10, 3}, {4, 12, 11, 5, 6, 9, 3}};
  std::vector<std::vector<int32_t>> together = translate_all(model, sources, wide, 3);
  REQUIRE(together.size() == sources.size());
  for (size_t i = 0; i < sources.size(); ++i) CHECK(together[i] == translate_all(model, {sources[i]}, wide, 1)[0]);
  CHECK(model.is_training());  // beam search restores the mode
}

TEST_CASE("RNNSearch: bad shapes and settings are clear errors") {
  Generator gen(1), noise(2);
  RNNSearchOptions bad = tiny_rnnsearch_options(NormKind::None);
  bad.target_vocab = 0;
  CHECK_THROWS_WITH_AS(RNNSearch(bad, gen, noise), doctest::Contains("must be positive"), Error);
  RNNSearchOptions batch_norm = tiny_rnnsearch_options(NormKind::BatchNorm);
  CHECK_THROWS_WITH_AS(RNNSearch(batch_norm, gen, noise), doctest::Contains("batchnorm"), Error);
  RNNSearch model(tiny_rnnsearch_options(NormKind::None), gen, noise);
  TinyPairs tiny;
  PaddedBatch one = pad_batch(tiny.target, Batch{0});
  CHECK_THROWS_WITH_AS(model.logits(tiny.src.ids, tiny.src.mask, one.ids, one.mask), doctest::Contains("differ"),
                       Error);
  Tensor empty_mask = Tensor::zeros(tiny.src.mask.shape());
  CHECK_THROWS_WITH_AS(model.encode(tiny.src.ids, empty_mask), doctest::Contains("empty"), Error);
}

TEST_CASE("init_center moves every weight matrix by the centre, biases and norm gains not at all") {
  // The same draws with and without the centre: each weight matrix (rank 2:
  // embeddings, GRU, attention, output) is the centred one plus 0.2, every
  // vector (biases, gains) the same. Means: an N(0, σ²) matrix of n values
  // has a mean within 6σ/√n of its centre but once in ~10⁹; an orthogonal
  // H×H block Q, |1ᵀQ1| ≤ ‖1‖·‖Q1‖ = H, so its mean is within 1/H, always.
  RNNSearchOptions o = tiny_rnnsearch_options(NormKind::RMSNorm, 0.01f);
  o.hidden = 16;
  o.embed = 8;
  Generator gen0(5), noise0(6), gen1(5), noise1(6);
  RNNSearch centred(o, gen0, noise0);
  o.init_center = 0.2f;
  RNNSearch moved(o, gen1, noise1);
  const NamedParameters before = centred.named_parameters(), after = moved.named_parameters();
  REQUIRE(before.size() == after.size());
  int matrices = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    const auto& [name, w0] = before[i];
    const Tensor &a = w0.value(), &b = after[i].second.value();
    CAPTURE(name);
    REQUIRE(after[i].first == name);
    if (a.shape().rank() != 2) {
      for (int64_t k = 0; k < a.numel(); ++k) CHECK(b.data()[k] == a.data()[k]);
      continue;
    }
    ++matrices;
    double mean0 = 0.0, mean1 = 0.0;
    for (int64_t k = 0; k < a.numel(); ++k) {
      CHECK(std::abs(b.data()[k] - a.data()[k] - 0.2f) < 1e-6f);
      mean0 += a.data()[k] / static_cast<double>(a.numel());
      mean1 += b.data()[k] / static_cast<double>(b.numel());
    }
    const bool orthogonal = name.find("weight_h_") != std::string::npos;
    const double tolerance = orthogonal ? 1.0 / o.hidden : 6.0 * 0.01 / std::sqrt(static_cast<double>(a.numel()));
    CHECK(std::abs(mean0) <= tolerance);
    CHECK(std::abs(mean1 - 0.2) <= tolerance);
  }
  CHECK(matrices == 26);  // embeddings 2, encoder GRUs 8, decoder GRUs 8, attention 3, initial state 1, output 4
}
