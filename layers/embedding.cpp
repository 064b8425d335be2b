#include "rmsgrad/layers/embedding.h"

#include "rmsgrad/core/error.h"
#include "rmsgrad/layers/init.h"

namespace rg {

Embedding::Embedding(int64_t vocab_size, int64_t embedding_dim, Generator& gen, float stddev, float center) {
  check(vocab_size > 0 && embedding_dim > 0, "Embedding: sizes must be positive, got V = {}, E = {}", vocab_size,
        embedding_dim);
  Tensor w = shift_center(init_normal(Shape{vocab_size, embedding_dim}, stddev, gen), center);
  weight = register_parameter("weight", w);
}

Var Embedding::forward(const Indices& ids) {
  for (size_t t = 0; t < ids.values.size(); ++t)
    check(ids.values[t] >= 0 && ids.values[t] < vocab_size(),
          "Embedding({} × {}): id {} at position {} of ids {} is outside [0, {})", vocab_size(), embedding_dim(),
          ids.values[t], t, ids.shape, vocab_size());
  return embedding(weight, ids);
}

}  // namespace rg
