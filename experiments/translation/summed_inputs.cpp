// The decoder's summed inputs by target position; what they are is in summed_inputs.h.
#include "rmsgrad/experiments/translation/summed_inputs.h"

#include <algorithm>
#include <cmath>

#include "rmsgrad/core/error.h"

namespace rg {

void MomentSums::add(std::span<const float> values) {
  for (float v : values) {
    sum += v;
    sum_squares += static_cast<double>(v) * v;
  }
  count += static_cast<double>(values.size());
}

double MomentSums::mean() const { return count > 0 ? sum / count : std::nan(""); }

double MomentSums::sd() const {
  if (count == 0) return std::nan("");
  const double m = mean();
  return std::sqrt(std::max(0.0, sum_squares / count - m * m));  // never below 0 by rounding
}

namespace {

// Row b of a [B, n] tensor.
std::span<const float> row(const Var& x, int64_t b) {
  const int64_t n = x.dim(1);
  return {x.value().data() + b * n, static_cast<size_t>(n)};
}

// The cell's summed inputs from the state h [B, H], raw and normalized, of
// the rows whose target token at position `t` (0-based) is real.
void collect(GRUCell& cell, const Var& h, const Tensor& mask_t, int64_t t, SummedInputStatistics& stats) {
  GRUCell::RecurrentTerms raw = cell.recurrent_terms(h);
  GRUCell::RecurrentTerms normalized{cell.norm_h_gates->forward(raw.gates), cell.norm_h_cand->forward(raw.candidate)};
  for (int64_t b = 0; b < h.dim(0); ++b) {
    if (mask_t.data()[b] == 0.0f) continue;
    for (const Var* terms : {&raw.gates, &raw.candidate}) {
      stats.raw_all.add(row(*terms, b));
      if (t < SummedInputStatistics::kPositions) stats.raw_at[static_cast<size_t>(t)].add(row(*terms, b));
    }
    for (const Var* terms : {&normalized.gates, &normalized.candidate}) {
      stats.normalized_all.add(row(*terms, b));
      if (t < SummedInputStatistics::kPositions) stats.normalized_at[static_cast<size_t>(t)].add(row(*terms, b));
    }
  }
}

}  // namespace

SummedInputStatistics decoder_summed_inputs(RNNSearch& model, const EncodedPairs& pairs, int64_t batch, int cell) {
  check(cell == 1 || cell == 2, "decoder_summed_inputs: the decoder has cells 1 and 2, not {}", cell);
  check(batch > 0, "decoder_summed_inputs: batch must be positive, got {}", batch);
  NoGradGuard no_grad;
  model.eval();
  GRUCell& observed = cell == 1 ? *model.decoder->gru1 : *model.decoder->gru2;
  SummedInputStatistics stats;
  for (int64_t first = 0; first < static_cast<int64_t>(pairs.size()); first += batch) {
    Batch indices;
    for (int64_t i = first; i < std::min<int64_t>(first + batch, pairs.size()); ++i) indices.push_back(i);
    TranslationBatch b = make_translation_batch(pairs, indices);
    // The teacher-forced decoder of RNNSearch::logits, step by step.
    SourceEncoding source = model.encode(b.source.ids, b.source.mask);
    GRUCell::InputTerms terms = model.decoder->project_targets(model.previous_words(b.target.ids));
    Var state = source.initial_state;
    for (int64_t t = 0; t < b.target.time_steps(); ++t) {
      const Tensor mask_t = mask_at(b.target.mask, t);
      ConditionalGRU::Step step = model.decoder->step(at_step(terms.gates, t), at_step(terms.candidate, t), state,
                                                      source.context, source.projected, source.mask, mask_t);
      collect(observed, cell == 1 ? state : step.intermediate, mask_t, t, stats);
      state = step.state;
    }
    stats.sentences += static_cast<int64_t>(indices.size());
  }
  model.train();
  return stats;
}

}  // namespace rg
