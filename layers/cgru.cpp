#include "rmsgrad/layers/cgru.h"

namespace rg {

ConditionalGRU::ConditionalGRU(int64_t embedding_size, int64_t hidden_size, int64_t context_size,
                               int64_t attention_size, const NormOptions& norm, Generator& gen, const GRUInit& init) {
  gru1 = register_module("gru1", std::make_shared<GRUCell>(embedding_size, hidden_size, norm, gen, init));
  WeightInit attention_init;
  attention_init.kind = WeightInitKind::Normal;
  attention_init.stddev = init.stddev;
  attention = register_module(
      "attention", std::make_shared<MLPAttention>(context_size, hidden_size, attention_size, norm, gen, attention_init));
  gru2 = register_module("gru2", std::make_shared<GRUCell>(context_size, hidden_size, norm, gen, init));
}

GRUCell::InputTerms ConditionalGRU::project_targets(const Var& embeddings) { return gru1->project_input(embeddings); }

ConditionalGRU::Step ConditionalGRU::step(const Var& x_gates, const Var& x_candidate, const Var& state,
                                          const AttentionValues& context, const Var& projected,
                                          const Tensor& source_mask, const Tensor& target_mask) {
  Var intermediate = gru1->step(x_gates, x_candidate, state, target_mask);
  AttentionOutput attended = attention->forward(intermediate, projected, context, source_mask);
  Var next = gru2->forward(attended.context, intermediate, target_mask);
  return {next, attended.context, attended.weights};
}

}  // namespace rg
