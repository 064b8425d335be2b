#pragma once
// Embedding: a lookup table of word vectors (Bengio et al. 2003).
//
//   y[t, :] = W[id_t, :]          W [V, E], ids of any shape → y [ids..., E]
//   dW[id_t, :] += dy[t, :]       only the rows looked up are touched
//
// W starts as N(c, σ²); σ = 0.01 is Nematus' init for every weight (the
// paper's RNNSearch), PyTorch's nn.Embedding uses σ = 1; the centre c is 0
// but for the paper's Figure 4. Parameter: "weight".
#include <cstdint>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/module.h"

namespace rg {

class Embedding : public Module {
 public:
  Embedding(int64_t vocab_size, int64_t embedding_dim, Generator& gen = default_generator(), float stddev = 0.01f,
            float center = 0.0f);

  Var forward(const Indices& ids);  // ids [...] → [..., E]
  Var operator()(const Indices& ids) { return forward(ids); }

  int64_t vocab_size() const { return weight.dim(0); }
  int64_t embedding_dim() const { return weight.dim(1); }

  Var weight;  // [V, E]
};

}  // namespace rg
