// The Transformer model (models/transformer.h): cached decoding against full
// recomputation, the loss against its definition, embedding sharing and the
// final norms, and a training smoke test (it learns to reverse sequences).
// The layers themselves are checked against PyTorch in test_transformer.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "rmsgrad/data/batching.h"
#include "rmsgrad/experiments/translation/beam_search.h"
#include "rmsgrad/experiments/translation/subword.h"
#include "rmsgrad/models/transformer.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

TransformerOptions tiny_options(NormKind norm, NormPosition position, float dropout = 0.0f) {
  TransformerOptions o;
  o.source_vocab = o.target_vocab = 12;
  o.encoder_layers = o.decoder_layers = 2;
  o.layer.model_size = 16;
  o.layer.ffn_size = 32;
  o.layer.heads = 4;
  o.layer.norm = NormOptions{.kind = norm, .p = 0.5f};
  o.layer.norm_position = position;
  o.layer.dropout = dropout;
  return o;
}

// Sentences of ids in [4, 12) (0–3 are <pad>, <unk>, <s>, </s>), each ending in </s>.
std::vector<std::vector<int32_t>> random_sentences(int64_t count, int64_t min_length, int64_t max_length,
                                                   Generator& gen) {
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t length = min_length + static_cast<int64_t>(gen.next_u64() % (max_length - min_length + 1));
    std::vector<int32_t> s;
    for (int64_t t = 0; t < length; ++t) s.push_back(static_cast<int32_t>(4 + gen.next_u64() % 8));
    s.push_back(kEosId);
    out.push_back(s);
  }
  return out;
}

Batch all_of(size_t n) {
  Batch b;
  for (size_t i = 0; i < n; ++i) b.push_back(static_cast<int64_t>(i));
  return b;
}

}  // namespace

TEST_CASE("Transformer: cached decoding gives the scores of full recomputation, post- and pre-norm") {
  for (NormPosition position : {NormPosition::Post, NormPosition::Pre})
    for (NormKind norm : {NormKind::LayerNorm, NormKind::RMSNorm}) {
      INFO(norm_position_name(position), " ", norm_name(norm));
      Generator init(1), noise(2), data(3);
      Transformer model(tiny_options(norm, position), init, noise);
      model.eval();
      auto sources = random_sentences(3, 2, 6, data);
      PaddedBatch src = pad_batch(sources, all_of(sources.size()), kPadId);
      NoGradGuard no_grad;
      model.cached_decoding = true;
      auto cached = model.start_decoding(src.ids, src.mask, 2);
      model.cached_decoding = false;
      auto full = model.start_decoding(src.ids, src.mask, 2);
      // Six positions of arbitrary words, with a reordering after each, as beam search does.
      std::vector<int32_t> previous(6, -1);
      for (int position_index = 0; position_index < 6; ++position_index) {
        Tensor a = cached->next(previous).value(), b = full->next(previous).value();
        REQUIRE(a.shape() == Shape{6, 12});
        // Same arithmetic in another order (one row against the whole prefix
        // per GEMM): log-probabilities of order 1 agree to a few float ulps.
        for (int64_t i = 0; i < a.numel(); ++i) CHECK(std::abs(a.data()[i] - b.data()[i]) < 1e-5f);
        std::vector<int32_t> parents{1, 1, 2, 3, 5, 4};  // rows stay within their sentence's pair
        cached->reorder(parents);
        full->reorder(parents);
        for (size_t r = 0; r < previous.size(); ++r) previous[r] = static_cast<int32_t>(4 + (r + position_index) % 8);
      }
      // Whole beam searches agree.
      BeamOptions beam{.beam = 3, .max_length_ratio = 1.5f, .max_length_extra = 3};
      model.cached_decoding = true;
      auto with_cache = beam_search(model, src.ids, src.mask, beam);
      model.cached_decoding = false;
      auto without = beam_search(model, src.ids, src.mask, beam);
      CHECK(with_cache == without);
    }
}

TEST_CASE("Transformer: the loss is the label-smoothed cross-entropy per real target token") {
  Generator init(4), noise(5), data(6);
  TransformerOptions o = tiny_options(NormKind::RMSNorm, NormPosition::Post);
  o.label_smoothing = 0.1f;
  Transformer model(o, init, noise);
  auto sources = random_sentences(3, 2, 5, data), targets = random_sentences(3, 1, 6, data);
  PaddedBatch src = pad_batch(sources, all_of(3), kPadId), tgt = pad_batch(targets, all_of(3), kPadId);
  NoGradGuard no_grad;
  Tensor logits = model.logits(src.ids, src.mask, tgt.ids, tgt.mask).value();  // [B·T, V], row b·T + t
  const int64_t steps = tgt.time_steps(), batch = tgt.batch_size(), vocab = 12;
  double smoothed = 0.0, plain = 0.0, tokens = 0.0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t) {
      if (tgt.mask.data()[t * batch + b] == 0.0f) continue;
      const float* row = logits.data() + (b * steps + t) * vocab;
      double top = row[0], z = 0.0, mean_log_p = 0.0;
      for (int64_t v = 0; v < vocab; ++v) top = std::max(top, static_cast<double>(row[v]));
      for (int64_t v = 0; v < vocab; ++v) z += std::exp(row[v] - top);
      const double log_z = top + std::log(z);
      for (int64_t v = 0; v < vocab; ++v) mean_log_p += (row[v] - log_z) / vocab;
      const double nll = log_z - row[tgt.ids.values[static_cast<size_t>(t * batch + b)]];
      smoothed += 0.9 * nll - 0.1 * mean_log_p;
      plain += nll;
      tokens += 1.0;
    }
  CHECK(model.loss(src.ids, src.mask, tgt.ids, tgt.mask).item() == doctest::Approx(smoothed / tokens).epsilon(1e-5));
  CHECK(model.token_cross_entropy(src.ids, src.mask, tgt.ids, tgt.mask).item() ==
        doctest::Approx(plain / tokens).epsilon(1e-5));
  // A mask of the wrong shape is an error, not a silent broadcast.
  CHECK_THROWS_AS(model.loss(src.ids, src.mask, tgt.ids, Tensor::ones(Shape{1, 1})), Error);
}

TEST_CASE("Transformer: shared embeddings are one parameter; pre-norm adds the final norms") {
  Generator init(7), noise(8);
  TransformerOptions o = tiny_options(NormKind::LayerNorm, NormPosition::Post);
  Transformer separate(o, init, noise);
  o.share_embeddings = true;
  Transformer shared(o, init, noise);
  CHECK(separate.parameter_count() - shared.parameter_count() == 12 * 16);
  CHECK(shared.source_words == shared.target_words);
  int tables = 0, final_norms = 0;
  for (const auto& [name, p] : shared.named_parameters()) tables += name.find("_words.") != std::string::npos;
  CHECK(tables == 1);
  o.layer.norm_position = NormPosition::Pre;
  Transformer pre(o, init, noise);
  for (const auto& [name, p] : pre.named_parameters())
    final_norms += name.rfind("encoder_norm.", 0) == 0 || name.rfind("decoder_norm.", 0) == 0;
  CHECK(final_norms == 4);  // gain and bias of each
  CHECK(pre.parameter_count() == shared.parameter_count() + 4 * 16);
  o.source_vocab = 13;
  CHECK_THROWS_AS(Transformer(o, init, noise), Error);  // sharing needs one vocabulary
}

TEST_CASE("Transformer: fits a fixed batch (training smoke test), every norm, post and pre") {
  // Eight translation pairs of random words, learned by heart: every
  // parameter's gradient has to be right for the loss to fall this far this
  // fast. At the start the per-token loss is above 2 (ln 12 ≈ 2.5 with
  // normalized layers; larger without a norm). With label smoothing 0.1 over
  // 12 words no model can go below the entropy of the smoothed target,
  // −(0.908 ln 0.908 + 11 · 0.0083 ln 0.0083) ≈ 0.53; after 100 Adam steps
  // every variant must be within 0.17 of it (observed: 0.58).
  Generator data(11);
  auto sources = random_sentences(8, 2, 5, data), targets = random_sentences(8, 2, 5, data);
  PaddedBatch src = pad_batch(sources, all_of(8), kPadId), tgt = pad_batch(targets, all_of(8), kPadId);
  for (NormKind norm : {NormKind::None, NormKind::LayerNorm, NormKind::RMSNorm, NormKind::PRMSNorm})
    for (NormPosition position : {NormPosition::Post, NormPosition::Pre}) {
      INFO(norm_name(norm), " ", norm_position_name(position));
      Generator init(9), noise(10);
      Transformer model(tiny_options(norm, position, 0.0f), init, noise);
      Adam adam(model.named_parameters(), AdamOptions{.lr = 3e-3, .beta2 = 0.98});
      double first = 0.0, last = 0.0;
      for (int step = 0; step < 100; ++step) {
        Var loss = model.loss(src.ids, src.mask, tgt.ids, tgt.mask);
        model.zero_grad();
        loss.backward();
        adam.step();
        if (step == 0) first = loss.item();
        last = loss.item();
      }
      CHECK(first > 2.0);
      CHECK(last < 0.7);
    }
}
