#pragma once
// GRU cell and layers, with the paper's four separately normalized groups
// (Cho et al. 2014, in the form Nematus uses; normalization as in Zhang &
// Sennrich 2019 §2):
//
//   gates: [a_r, a_u] = norm_x_gates(x W_xgᵀ + b_g) + norm_h_gates(h U_gᵀ)     [2H, jointly]
//   cand:  a_c        = norm_x_cand(x W_xcᵀ + b_c) + r ⊙ norm_h_cand(h U_cᵀ)   [H]
//   r = σ(a_r), u = σ(a_u), c = tanh(a_c), h' = u ⊙ h + (1 − u) ⊙ c
//
// The input bias is added before its norm, and no bias follows a norm (the
// LayerNorm twin carries its own bias per group). Norm "weightnorm" instead
// reparameterises each of the four weights, W_i = g_i · v_i / ‖v_i‖ per row
// (autograd/weight_norm.h), and normalizes no activation. With norm "none" this is
// the plain GRU. The input terms of a whole sequence are projected and
// normalized at once (one GEMM per group); only the recurrent terms are
// computed step by step.
//
// Below the cell and the layer: StackedGRU, layers on layers as
// torch.nn.GRU stacks them, and ConditionalGRU, the decoder step of Nematus
// (two cells around an attention).
#include <cstdint>
#include <memory>

#include <vector>

#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/attention.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/layers/sequential.h"

namespace rg {

struct GRUInit {
  float stddev = 0.01f;             // N(0, σ) for input weights (Nematus)
  bool orthogonal_recurrent = true; // each H×H block of U orthogonal
  float center = 0.0f;              // added to every weight (not the biases): the paper's Figure 4 uses 0.2
};

class GRUCell : public Module {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, const NormOptions& norm = {},
          Generator& gen = default_generator(), const GRUInit& init = {});

  struct InputTerms {
    Var gates;      // [..., 2H]
    Var candidate;  // [..., H]
  };
  // x [..., E] → the normalized input terms, for any number of positions.
  InputTerms project_input(const Var& x);
  // The hidden-to-hidden summed inputs h U_gᵀ [B, 2H] and h U_cᵀ [B, H] of
  // the state h [B, H], before their norms (step normalizes them; the
  // paper's Table 5 looks at them in the decoder).
  struct RecurrentTerms {
    Var gates;      // [B, 2H]
    Var candidate;  // [B, H]
  };
  RecurrentTerms recurrent_terms(const Var& h);
  // One step from this step's input terms [B, 2H] and [B, H] and the state
  // h [B, H]; mask [B] (1 = real token) or undefined.
  Var step(const Var& x_gates, const Var& x_candidate, const Var& h, const Tensor& mask = {});
  // Convenience: project x [B, E] and step.
  Var forward(const Var& x, const Var& h, const Tensor& mask = {});

  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }

  // Under weight norm (NormKind::WeightNorm) the four weights hold the
  // directions v (parameters "<name>_v") and each has a gain g ("<name>_g").
  Var weight_x_gates, bias_gates, weight_x_cand, bias_cand, weight_h_gates, weight_h_cand;
  std::shared_ptr<Norm> norm_x_gates, norm_x_cand, norm_h_gates, norm_h_cand;

 private:
  // The weight a product uses: w, or g · v / ‖v‖ row by row under weight norm
  // (which: 0 x_gates, 1 x_cand, 2 h_gates, 3 h_cand).
  Var effective(const Var& weight, int which) const;
  bool weight_norm_ = false;
  std::vector<Var> weight_gains_;
  int64_t input_size_, hidden_size_;
};

// A GRU over a padded batch x [T, B, E] with mask [T, B] (1 = real token;
// padded steps carry the state unchanged). Returns every state [T, B, H] in
// time order; `reverse` runs from the last step to the first.
class GRU : public Module {
 public:
  GRU(int64_t input_size, int64_t hidden_size, const NormOptions& norm = {}, Generator& gen = default_generator(),
      bool reverse = false, const GRUInit& init = {});

  // The same interface as LSTM's: every state and the last one from one pass.
  struct Output {
    Var states;  // [T, B, H], in time order
    Var last;    // [B, H]: the state after the final step taken (t = T−1, or t = 0 in reverse)
  };
  // h0 [B, H] is the initial state, zeros when undefined.
  Output run(const Var& x, const Tensor& mask = {}, const Var& h0 = {});
  Var forward(const Var& x, const Tensor& mask = {}, const Var& h0 = {}) { return run(x, mask, h0).states; }
  // Only the last state [B, H] (for a sentence encoder): no [T, B, H] stack is built.
  Var last_state(const Var& x, const Tensor& mask = {}, const Var& h0 = {});
  std::shared_ptr<GRUCell> cell;

 private:
  // Runs the steps; calls keep(t, h) with each step's state; returns the last.
  template <class Keep>
  Var run_steps(const Var& x, const Tensor& mask, const Var& h0, Keep&& keep);
  bool reverse_;
};

// Forward and reverse GRUs, states concatenated: [T, B, 2H].
class BiGRU : public Module {
 public:
  BiGRU(int64_t input_size, int64_t hidden_size, const NormOptions& norm = {},
        Generator& gen = default_generator(), const GRUInit& init = {});
  Var forward(const Var& x, const Tensor& mask = {});
  std::shared_ptr<GRU> forward_gru, backward_gru;
};

// ---- stacked layers ----
// Several GRU layers, each reading the states of the layer below, as
// torch.nn.GRU(num_layers, bidirectional, dropout) stacks them:
//
//   h¹ = GRU₁(x),  hˡ = GRUₗ(dropout(hˡ⁻¹)),  states = hᴸ        [T, B, H]
//
// Bidirectional: every layer runs forward and in reverse over its input and
// concatenates the two, [T, B, 2H], which is the next layer's input. Dropout
// (training only) sits between layers, not after the last. Time-major, with
// the mask and the initial states of GRU (above).
//
// Names: "forward.<l>.cell…" and, bidirectional, "reverse.<l>.cell…".

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

// ---- the conditional GRU ----
// The conditional GRU decoder step of Nematus (Sennrich et al. 2017, §2.3;
// normalized as in Zhang & Sennrich 2019):
//
//   s'_j       = GRU1(y_{j−1}, s_{j−1})            the previous target word
//   c_j, α_j   = Attention(s'_j, C)                MLP attention over the source
//   s_j        = GRU2(c_j, s'_j)                   the attended context
//
// Both GRUs are normalized GRU cells (above) and the attention
// normalizes both of its terms, all through the one NormOptions. GRU1's input
// terms depend only on the target words, so with teacher forcing they are
// projected for every position at once (project_targets); GRU2's input is
// the context, known only inside the step.

class ConditionalGRU : public Module {
 public:
  ConditionalGRU(int64_t embedding_size, int64_t hidden_size, int64_t context_size, int64_t attention_size,
                 const NormOptions& norm, Generator& gen, const GRUInit& init = {});

  struct Step {
    Var state;         // s_j [B, H]
    Var context;       // c_j [B, C]
    Var weights;       // α_j [S, B]
    Var intermediate;  // s'_j [B, H], GRU2's state input
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
