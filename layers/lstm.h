#pragma once
// LSTM cell and layers with the paper's three normalized places (Hochreiter &
// Schmidhuber 1997; normalized as in the attentive reader of Zhang & Sennrich
// 2019 §2):
//
//   a = norm_x(x W_xᵀ + b) + norm_h(h W_hᵀ)      [4H, each term normalized jointly]
//   [a_i | a_f | a_g | a_o] = a                   gate order i, f, g, o (PyTorch's)
//   i, f, o = σ(a_i), σ(a_f), σ(a_o),  g = tanh(a_g)
//   c' = f ⊙ c + i ⊙ g                            carried unnormalized
//   h' = o ⊙ tanh(norm_c(c'))
//
// One bias, inside the input term before its norm (the attentive reader's
// code adds it twice; we do not). With norm "none" this is torch.nn.LSTMCell
// with b_ih = bias and b_hh = 0. At padded steps (mask 0) h and c are carried
// unchanged. The input terms of a whole sequence are projected and normalized
// at once (one GEMM); only the recurrent term is computed step by step.
//
// Parameters: weight_x [4H, E], bias [4H], weight_h [4H, H], and the norms
// norm_x (4H), norm_h (4H), norm_c (H). Init: Xavier uniform per gate block of
// weight_x, orthogonal per H×H gate block of weight_h ("Xavier init,
// orthogonal square weights"), bias 0 except the forget block (forget_bias).
//
// With batchnorm, norm_x pools its statistics over all T·B positions and
// norm_h / norm_c over the B rows of each step (padded rows included); the
// per-step statistics of BN-LSTM (Cooijmans et al. 2017) are not modelled.
#include <cstdint>
#include <memory>

#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"

namespace rg {

struct LSTMInit {
  bool orthogonal_recurrent = true;  // else Xavier uniform like the input weights
  float forget_bias = 0.0f;          // initial value of the f block of the bias
};

struct LSTMState {
  Var h, c;  // [B, H] each
};

class LSTMCell : public Module {
 public:
  LSTMCell(int64_t input_size, int64_t hidden_size, const NormOptions& norm = {},
           Generator& gen = default_generator(), const LSTMInit& init = {});

  // x [..., E] → norm_x(x W_xᵀ + b) [..., 4H], for any number of positions.
  Var project_input(const Var& x);
  // One step from this step's input term [B, 4H] and the state; mask [B]
  // (1 = real token) or undefined.
  LSTMState step(const Var& x_term, const LSTMState& state, const Tensor& mask = {});
  // Convenience: project x [B, E] and step.
  LSTMState forward(const Var& x, const LSTMState& state, const Tensor& mask = {});
  // Zero h and c for a batch of `batch` rows (constants).
  LSTMState zero_state(int64_t batch) const;

  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }

  Var weight_x, bias, weight_h;
  std::shared_ptr<Norm> norm_x, norm_h, norm_c;

 private:
  int64_t input_size_, hidden_size_;
};

// An LSTM over a padded batch x [T, B, E] with mask [T, B] (1 = real token;
// padded steps carry h and c unchanged). `reverse` runs from the last step to
// the first; states are returned in time order either way.
class LSTM : public Module {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, const NormOptions& norm = {}, Generator& gen = default_generator(),
       bool reverse = false, const LSTMInit& init = {});

  struct Output {
    Var states;      // h at every step [T, B, H]
    LSTMState last;  // the state after the final step taken (t = T−1, or t = 0 in reverse)
  };
  // The initial state is zeros when `initial.h` / `initial.c` are undefined.
  Output run(const Var& x, const Tensor& mask = {}, const LSTMState& initial = {});
  Var forward(const Var& x, const Tensor& mask = {}, const LSTMState& initial = {}) {
    return run(x, mask, initial).states;
  }

  std::shared_ptr<LSTMCell> cell;

 private:
  bool reverse_;
};

// Forward and reverse LSTMs, states concatenated: [T, B, 2H].
class BiLSTM : public Module {
 public:
  BiLSTM(int64_t input_size, int64_t hidden_size, const NormOptions& norm = {},
         Generator& gen = default_generator(), const LSTMInit& init = {});
  Var forward(const Var& x, const Tensor& mask = {});
  std::shared_ptr<LSTM> forward_lstm, backward_lstm;
};

}  // namespace rg
