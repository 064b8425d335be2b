// The paper's Table 5 statistics (experiments/translation/summed_inputs.h):
// the moments by hand, the decoder's summed inputs at the first position of
// a model whose weights make them known, and the observer leaving the model
// as it was.
#include <doctest/doctest.h>

#include <cmath>

#include "rmsgrad/experiments/translation/summed_inputs.h"
#include "rmsgrad/rmsgrad.h"
#include "rnnsearch_test_options.h"

using namespace rg;

namespace {

using test::tiny_rnnsearch_options;

// Three pairs of different lengths, each side ending in </s> (id 3).
EncodedPairs three_pairs() {
  EncodedPairs pairs;
  pairs.source = {{4, 5, 6, 7, 3}, {8, 9, 3}, {10, 3}};
  pairs.target = {{4, 5, 3}, {6, 7, 8, 9, 3}, {10, 3}};
  pairs.line = {0, 1, 2};
  return pairs;
}

// The initial state s_0 = tanh(norm_init(0 · C + c)) = tanh(norm_init(c·1)),
// the same for every sentence, and GRU1's recurrent weights U_g = 1, U_c = 2
// (every entry): at position 1 each of the 2H gate terms is a = H·tanh(·) and
// each of the H candidate terms 2a.
void make_first_position_known(RNNSearch& model, float c) {
  model.init_state->weight.value().fill(0.0f);
  model.init_state->bias.value().fill(c);
  model.decoder->gru1->weight_h_gates.value().fill(1.0f);
  model.decoder->gru1->weight_h_cand.value().fill(2.0f);
}

}  // namespace

TEST_CASE("MomentSums: the mean and population standard deviation of everything added") {
  MomentSums m;
  CHECK(std::isnan(m.mean()));
  CHECK(std::isnan(m.sd()));
  const std::vector<float> first = {1.0f, 2.0f, 3.0f}, second = {6.0f};
  m.add(first);
  m.add(second);
  CHECK(m.count == 4.0);
  CHECK(m.mean() == doctest::Approx(3.0));
  CHECK(m.sd() == doctest::Approx(std::sqrt((4.0 + 1.0 + 0.0 + 9.0) / 4.0)));  // deviations −2, −1, 0, 3
  MomentSums constant;
  const std::vector<float> same(7, 0.1f);
  constant.add(same);
  CHECK(constant.sd() == 0.0);  // rounding never goes below zero
}

TEST_CASE("decoder summed inputs: position 1 by hand, without a norm and with RMSNorm") {
  const EncodedPairs pairs = three_pairs();
  Generator gen(1), noise(2);
  SUBCASE("no norm: the raw terms, twice over") {
    RNNSearch model(tiny_rnnsearch_options(NormKind::None), gen, noise);
    make_first_position_known(model, 0.5f);
    const double a = 5.0 * std::tanh(0.5);  // H · tanh(c)
    const SummedInputStatistics stats = decoder_summed_inputs(model, pairs, 2);
    // 2H values a and H values 2a: mean 4a/3, mean square 2a², variance 2a² − 16a²/9 = 2a²/9.
    CHECK(stats.sentences == 3);
    CHECK(stats.raw_at[0].count == 3 * 15);
    CHECK(stats.raw_at[0].mean() == doctest::Approx(4.0 * a / 3.0).epsilon(1e-5));
    CHECK(stats.raw_at[0].sd() == doctest::Approx(a * std::sqrt(2.0) / 3.0).epsilon(1e-4));
    CHECK(stats.normalized_at[0].mean() == stats.raw_at[0].mean());
    // Position 2 has all three sentences, 3 the two longer ones, 4 the longest; "all" every real token.
    CHECK(stats.raw_at[1].count == 3 * 15);
    CHECK(stats.raw_at[2].count == 2 * 15);
    CHECK(stats.raw_at[3].count == 1 * 15);
    CHECK(stats.raw_all.count == (3 + 5 + 2) * 15);
    CHECK(std::isfinite(stats.raw_all.mean()));
    CHECK(std::isfinite(stats.raw_all.sd()));
    CHECK(model.is_training());  // evaluation mode only while it runs
  }
  SUBCASE("RMSNorm: a constant vector normalizes to its sign, the gains being 1") {
    RNNSearch model(tiny_rnnsearch_options(NormKind::RMSNorm), gen, noise);
    make_first_position_known(model, 0.5f);
    const SummedInputStatistics stats = decoder_summed_inputs(model, pairs, 3);
    CHECK(stats.raw_at[0].mean() > 0.0);
    CHECK(stats.normalized_at[0].mean() == doctest::Approx(1.0).epsilon(1e-4));
    CHECK(stats.normalized_at[0].sd() < 1e-3);
  }
}

TEST_CASE("decoder summed inputs: batching changes nothing, and the second cell reads s'_j") {
  const EncodedPairs pairs = three_pairs();
  Generator gen(3), noise(4);
  RNNSearch model(tiny_rnnsearch_options(NormKind::LayerNorm), gen, noise);
  const SummedInputStatistics one = decoder_summed_inputs(model, pairs, 1);
  const SummedInputStatistics all = decoder_summed_inputs(model, pairs, 3);
  for (size_t j = 0; j < 4; ++j) {
    CHECK(one.raw_at[j].mean() == doctest::Approx(all.raw_at[j].mean()).epsilon(1e-5));
    CHECK(one.normalized_at[j].sd() == doctest::Approx(all.normalized_at[j].sd()).epsilon(1e-5));
  }
  const SummedInputStatistics second = decoder_summed_inputs(model, pairs, 3, 2);
  CHECK(second.raw_all.count == all.raw_all.count);
  CHECK(second.raw_all.mean() != all.raw_all.mean());
  CHECK_THROWS_WITH_AS(decoder_summed_inputs(model, pairs, 3, 3), doctest::Contains("cells 1 and 2"), Error);
}
