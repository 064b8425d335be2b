#include "rmsgrad/layers/sequential.h"

namespace rg {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Layer>> layers) {
  for (const auto& layer : layers) append(layer);
}

void Sequential::append(std::shared_ptr<Layer> layer) {
  check(layer != nullptr, "Sequential: layer {} is null", layers_.size());
  layers_.emplace_back();
  register_module(std::to_string(layers_.size() - 1), layers_.back(), std::move(layer));
}

Var Sequential::forward(const Var& x) {
  Var y = x;
  for (const auto& layer : layers_) y = layer->forward(y);
  return y;
}

Layer& Sequential::operator[](size_t i) const {
  check(i < layers_.size(), "Sequential: index {} is out of range for {} layers", i, layers_.size());
  return *layers_[i];
}

}  // namespace rg
