#include "rmsgrad/layers/stacked_gru.h"

#include "rmsgrad/core/error.h"

namespace rg {

StackedGRU::StackedGRU(int64_t input_size, int64_t hidden_size, const StackedGRUOptions& options, Generator& gen)
    : hidden_size_(hidden_size), bidirectional_(options.bidirectional) {
  check(options.layers >= 1, "StackedGRU: the number of layers must be at least 1, not {}", options.layers);
  forward_ = register_module("forward", std::make_shared<ModuleList<GRU>>());
  if (bidirectional_) reverse_ = register_module("reverse", std::make_shared<ModuleList<GRU>>());
  for (int64_t l = 0; l < options.layers; ++l) {
    const int64_t in = l == 0 ? input_size : output_size();
    forward_->push_back(std::make_shared<GRU>(in, hidden_size, options.norm, gen, false, options.init));
    if (bidirectional_) reverse_->push_back(std::make_shared<GRU>(in, hidden_size, options.norm, gen, true, options.init));
  }
  if (options.dropout > 0.0f && options.layers > 1)
    dropout_ = register_module("dropout", std::make_shared<Dropout>(options.dropout, gen.next_u64()));
}

StackedGRU::Output StackedGRU::run(const Var& x, const Tensor& mask, const std::vector<Var>& initial) {
  const size_t per_layer = bidirectional_ ? 2 : 1;
  check(initial.empty() || initial.size() == forward_->size() * per_layer,
        "StackedGRU: {} initial states given, the stack has {} (layers × directions)", initial.size(),
        forward_->size() * per_layer);
  auto initial_state = [&](size_t i) { return initial.empty() ? Var() : initial[i]; };
  Output out;
  Var input = x;
  for (size_t l = 0; l < forward_->size(); ++l) {
    if (l > 0 && dropout_) input = dropout_->forward(input, 1);  // [T, B, ·]
    GRU::Output f = (*forward_)[l].run(input, mask, initial_state(l * per_layer));
    out.last.push_back(f.last);
    if (bidirectional_) {
      GRU::Output r = (*reverse_)[l].run(input, mask, initial_state(l * per_layer + 1));
      out.last.push_back(r.last);
      input = concat({f.states, r.states}, -1);
    } else {
      input = f.states;
    }
  }
  out.states = input;
  return out;
}

}  // namespace rg
