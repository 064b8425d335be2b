#pragma once
// What a translation model offers the machinery around it: the training
// loss, the validation loss, and decoding one position at a time. RNNSearch
// and the Transformer both implement it, so that one driver body, one beam
// search and one scorer (experiments/translation/) serve both.
//
// Sentences come time-major, as the batching makes them: ids [S, B] with a
// mask [S, B] (1 = real token); every sentence ends in </s> and has at least
// one real token.
//
// Decoding. start_decoding encodes B source sentences, each repeated `copies`
// times (beam search's k hypotheses per sentence share their source), and
// returns the decoder's state for the B·copies rows; row b·copies + j is copy
// j of sentence b. Then, position by position:
//
//   log_probs = state.next(previous)      previous[r]: the word row r emitted
//                                          last, or −1 at the first position
//   state.reorder(parents)                 row r continues the hypothesis of
//                                          row parents[r], always a row of the
//                                          same sentence
//
// Nothing is recorded on the tape while decoding (beam search runs under
// NoGradGuard, in evaluation mode).
#include <cstdint>
#include <memory>
#include <vector>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/module.h"

namespace rg {

// Throws unless ids and mask are both [T, B], naming the model and the side
// ("source", "target"): the check every Seq2Seq makes of its inputs.
inline void check_sentences(const Indices& ids, const Tensor& mask, const char* model, const char* side) {
  check(ids.shape.rank() == 2 && mask.defined() && mask.shape() == ids.shape,
        "{}: {} ids {} and mask {} must both be [T, B]", model, side, ids.shape,
        shape_of(mask));
}

class DecodingState {
 public:
  virtual ~DecodingState() = default;
  // log p(next word | source, hypothesis so far), [rows, target vocabulary].
  virtual Var next(const std::vector<int32_t>& previous) = 0;
  virtual void reorder(const std::vector<int32_t>& parents) = 0;
};

class Seq2Seq : public Module {
 public:
  // The training cost of a batch, a mean over its sentences or over its real
  // target tokens (loss_mean() says which; data-parallel training needs it
  // to weight each process's share).
  virtual Var loss(const Indices& source, const Tensor& source_mask, const Indices& target,
                   const Tensor& target_mask) = 0;
  enum class LossMean { PerSentence, PerToken };
  virtual LossMean loss_mean() const = 0;
  // The mean cross-entropy per real target token, teacher forced, without
  // label smoothing: the validation loss every translation model reports.
  virtual Var token_cross_entropy(const Indices& source, const Tensor& source_mask, const Indices& target,
                                  const Tensor& target_mask) = 0;
  virtual std::unique_ptr<DecodingState> start_decoding(const Indices& source, const Tensor& source_mask,
                                                        int64_t copies) = 0;
  virtual int64_t target_vocab() const = 0;
};

}  // namespace rg
