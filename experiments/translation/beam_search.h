#pragma once
// Batched beam search for any translation model (models/seq2seq.h), and
// greedy search, which is beam 1.
//
// Each sentence of the batch keeps up to k hypotheses; all B·k of them run
// through the decoder together, one position per step, on the source
// encoding repeated k times (Seq2Seq::start_decoding). At every position,
// for each sentence:
//
//   candidates  every live hypothesis h extended by every word w,
//               score(h + w) = score(h) + log p(w | h, source)
//   keep        the best (k − finished) candidates; those ending in </s> are
//               finished, the others live on (their decoder state follows
//               its parent's row: DecodingState::reorder)
//
// A sentence is done when k hypotheses have finished (the beam shrinks as
// they do, as in Nematus) or when it reaches max_length_ratio · source length
// + max_length_extra tokens, when its live hypotheses are finished as they
// stand. The answer is the finished hypothesis with the best
//
//   score / length^length_norm        (length counts </s>; 0: raw log-probability)
//
// Results are subword ids without </s>. Nothing is recorded on the tape.
#include <cstdint>
#include <vector>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/models/seq2seq.h"

namespace rg {

struct BeamOptions {
  int beam = 5;
  float length_norm = 1.0f;
  float max_length_ratio = 2.0f;
  int64_t max_length_extra = 10;
};

// source ids [S, B] and mask [S, B] → B translations (ids, no </s>). The
// model is put in evaluation mode for the search and restored after.
std::vector<std::vector<int32_t>> beam_search(Seq2Seq& model, const Indices& source, const Tensor& source_mask,
                                              const BeamOptions& options);

// Translates many sentences (ids ending in </s>) in batches of up to
// batch_size, sorted by length so that little padding is computed; the
// results come back in the input order.
std::vector<std::vector<int32_t>> translate_all(Seq2Seq& model, const std::vector<std::vector<int32_t>>& sources,
                                                const BeamOptions& options, int64_t batch_size);

}  // namespace rg
