#pragma once
// Several GRU layers, each reading the states of the layer below, as
// torch.nn.GRU(num_layers, bidirectional, dropout) stacks them:
//
//   h¹ = GRU₁(x),  hˡ = GRUₗ(dropout(hˡ⁻¹)),  states = hᴸ        [T, B, H]
//
// Bidirectional: every layer runs forward and in reverse over its input and
// concatenates the two, [T, B, 2H], which is the next layer's input. Dropout
// (training only) sits between layers, not after the last. Time-major, with
// the mask and the initial states of GRU (layers/gru.h).
//
// Names: "forward.<l>.cell…" and, bidirectional, "reverse.<l>.cell…".
#include <cstdint>
#include <memory>
#include <vector>

#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/gru.h"
#include "rmsgrad/layers/sequential.h"

namespace rg {

struct StackedGRUOptions {
  int64_t layers = 2;
  bool bidirectional = false;
  float dropout = 0.0f;  // between layers
  NormOptions norm = {};
  GRUInit init = {};
};

class StackedGRU : public Module {
 public:
  StackedGRU(int64_t input_size, int64_t hidden_size, const StackedGRUOptions& options = {},
             Generator& gen = default_generator());

  struct Output {
    Var states;             // the top layer's states [T, B, H], or [T, B, 2H] bidirectional
    std::vector<Var> last;  // each layer's last state [B, H]: layer 0 forward, (layer 0 reverse,) layer 1 ...
  };
  // initial: one state [B, H] per entry of Output::last, or empty for zeros.
  Output run(const Var& x, const Tensor& mask = {}, const std::vector<Var>& initial = {});
  Var forward(const Var& x, const Tensor& mask = {}) { return run(x, mask).states; }

  int64_t output_size() const { return hidden_size_ * (bidirectional_ ? 2 : 1); }

 private:
  std::shared_ptr<ModuleList<GRU>> forward_, reverse_;
  std::shared_ptr<Dropout> dropout_;  // null without dropout
  int64_t hidden_size_;
  bool bidirectional_;
};

}  // namespace rg
