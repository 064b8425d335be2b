#pragma once
// A multi-layer perceptron: Linear layers with an activation between them,
// and optionally a normalization before each activation and dropout after it.
//
//   MLP(784, {512, 256}, 10) is   Linear(784→512) → ReLU
//                               → Linear(512→256) → ReLU
//                               → Linear(256→10)            (logits: no activation)
//
// With options.norm = RMSNorm each hidden block is Linear → RMSNorm → ReLU:
// the norm normalizes the summed inputs of the block's units, which is where
// the paper puts it (its Eq. 1: a_i = w_iᵀx, then the norm, then f).
// Names follow Sequential's: "0.weight", "1.gain", ... in block order.
#include <cstdint>
#include <vector>

#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/activations.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/layers/sequential.h"

namespace rg {

struct MLPOptions {
  Activation activation = Activation::ReLU;
  NormOptions norm = {};     // kind None: no normalization
  float dropout = 0.0f;      // probability, after each hidden activation; 0: none
  LinearOptions linear = {};
};

class MLP : public Sequential {
 public:
  MLP(int64_t in_features, const std::vector<int64_t>& hidden_sizes, int64_t out_features,
      Generator& gen = default_generator(), const MLPOptions& options = {});
  MLP(int64_t in_features, const std::vector<int64_t>& hidden_sizes, int64_t out_features,
      const MLPOptions& options)
      : MLP(in_features, hidden_sizes, out_features, default_generator(), options) {}
};

}  // namespace rg
