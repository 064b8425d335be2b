#pragma once
// The statistics of the paper's Table 5: RNNSearch's decoder GRU, teacher
// forced over a set of pairs, and the hidden-to-hidden summed inputs of one
// of its two cells, by target position (build/bin/summed_inputs).
//
// At target position j (1-based: j = 1 is the first target token) the cell
// reads a state h and forms its recurrent terms, H units of the state → 3H
// summed inputs:
//
//   cell 1 (GRU1, the paper's "hidden-to-hidden" of the decoder): h = s_{j−1},
//           the decoder state before y_j is predicted (s_0 the initial state)
//   cell 2 (GRU2): h = s'_j, GRU1's output at the same position
//
//   raw         a_j = [h U_gᵀ ; h U_cᵀ]                           [3H]
//   normalized  [norm_h_gates(h U_gᵀ) ; norm_h_cand(h U_cᵀ)]     [3H]
//               what the gates receive: with the gains (and LayerNorm's
//               bias); the same as raw without a norm
//
// For each position j = 1..4, and for "all" (every real position):
//
//   M_j = the mean of every one of the 3H values of every a_j, over the
//         sentences that have a real token at position j
//   S_j = sqrt(mean (a − M_j)²) over those same values
//
// So M and S pool the hidden units and the sentences: S is the spread of all
// the values, not the mean of each vector's own σ (what LayerNorm divides
// by). PAPER.md gives the numbers but not this definition; this is the
// plainer reading, and "raw" is the summed input before any normalization.
#include <array>
#include <cstdint>
#include <span>

#include "rmsgrad/experiments/translation/translation_data.h"
#include "rmsgrad/models/rnnsearch.h"

namespace rg {

// Count, sum and sum of squares of values, in double.
struct MomentSums {
  double count = 0.0, sum = 0.0, sum_squares = 0.0;
  void add(std::span<const float> values);
  double mean() const;
  double sd() const;  // population: sqrt(mean(a²) − mean(a)²)
};

struct SummedInputStatistics {
  static constexpr int kPositions = 4;  // the paper's columns 1, 2, 3, 4
  std::array<MomentSums, kPositions> raw_at, normalized_at;
  MomentSums raw_all, normalized_all;
  int64_t sentences = 0;
};

// Runs the decoder teacher forced over `pairs`, `batch` sentences at a time,
// in eval mode without recording, and collects the summed inputs of `cell`
// (1 or 2) as above.
SummedInputStatistics decoder_summed_inputs(RNNSearch& model, const EncodedPairs& pairs, int64_t batch, int cell = 1);

}  // namespace rg
