#pragma once
// The conditional GRU decoder step of Nematus (Sennrich et al. 2017, §2.3;
// normalized as in Zhang & Sennrich 2019):
//
//   s'_j       = GRU1(y_{j−1}, s_{j−1})            the previous target word
//   c_j, α_j   = Attention(s'_j, C)                MLP attention over the source
//   s_j        = GRU2(c_j, s'_j)                   the attended context
//
// Both GRUs are normalized GRU cells (layers/gru.h) and the attention
// normalizes both of its terms, all through the one NormOptions. GRU1's input
// terms depend only on the target words, so with teacher forcing they are
// projected for every position at once (project_targets); GRU2's input is
// the context, known only inside the step.
#include <cstdint>
#include <memory>

#include "rmsgrad/layers/attention.h"
#include "rmsgrad/layers/gru.h"

namespace rg {

class ConditionalGRU : public Module {
 public:
  ConditionalGRU(int64_t embedding_size, int64_t hidden_size, int64_t context_size, int64_t attention_size,
                 const NormOptions& norm, Generator& gen, const GRUInit& init = {});

  struct Step {
    Var state;    // s_j [B, H]
    Var context;  // c_j [B, C]
    Var weights;  // α_j [S, B]
  };

  // Target embeddings y [..., E] → GRU1's normalized input terms.
  GRUCell::InputTerms project_targets(const Var& embeddings);
  // One decoder step. x_gates [B, 2H] and x_candidate [B, H] are this step's
  // GRU1 input terms; context [S, B, C] with projected = attention->precompute(context);
  // source_mask [S, B]; target_mask [B] (padded steps keep the state) or undefined.
  Step step(const Var& x_gates, const Var& x_candidate, const Var& state, const AttentionValues& context,
            const Var& projected, const Tensor& source_mask, const Tensor& target_mask = {});

  std::shared_ptr<GRUCell> gru1, gru2;
  std::shared_ptr<MLPAttention> attention;
};

}  // namespace rg
