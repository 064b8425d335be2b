#pragma once
// The bidirectional attentive reader (Hermann et al. 2015;
// models/attentive_reader.h) at the paper's recipe: batch 64, documents of
// up to 300 tokens, word vectors and LSTMs of 240, 10 candidates, dropout
// 0.5, global clip 10, Adam 8e-5. The PyTorch twin is
// bench/attentive_reader_torch.py.
//
// The batch (time-major): document b of length Ld_b = Lmin + (7b) mod
// (Td − Lmin + 1) with Lmin = ⌈5·Td/6⌉ (250–300 for doc_len 300), query b of
// length 12 + (5b) mod 9, K candidates (no padding slots), answer b mod K;
// ids uniform in [4, V), drawn from generator 0 after the parameters.
// Settings: batch doc_len vocab embed hidden candidates.
#include <memory>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/models/attentive_reader.h"

namespace rg::bench {

class ReaderStep : public ModelStep {
 public:
  ReaderStep(const NormOptions& norm, Sizes& sizes);
  Var batch_loss() override;
  Module& model() override { return *model_; }
  void reshape(int64_t batch, int64_t doc_len, int64_t query_len) override;

 private:
  Generator gen_{0}, noise_gen_{1};
  std::unique_ptr<AttentiveReader> model_;
  TokenBatch document_, query_;
  Indices candidates_, answers_;
  Tensor candidate_padding_;
  int64_t vocab_ = 0, candidates_per_question_ = 0;
};

}  // namespace rg::bench
