#pragma once
// Rotary position embeddings (Su et al. 2021, RoFormer), in the rotate-half
// form of GPT-NeoX and Hugging Face's LLaMA.
//
// x is [B, T, H, Dh]: a projection [B, T, D] viewed per head, D = H·Dh, the
// layout in which MultiHeadAttention (layers/attention.h) rotates its queries
// and keys before it splits the heads. Dh is even; half = Dh/2. Unit i < half
// of every head is paired with unit i + half, and row t's pair is turned by
// the angle p_t·θ_i, p_t the row's position:
//
//   θ_i = base^(−2i/Dh)                                      i = 0 … half − 1
//   y_i        = x_i · cos(p_t θ_i) − x_{i+half} · sin(p_t θ_i)
//   y_{i+half} = x_{i+half} · cos(p_t θ_i) + x_i · sin(p_t θ_i)
//
// which is HF's y = x·cos + rotate_half(x)·sin with rotate_half(x) = [−x₂, x₁]
// and each angle written twice, [θ, θ]. Meta's original LLaMA code pairs
// neighbours (2i, 2i + 1) instead; its checkpoints reach this form by
// permuting the rows of W_q and W_k, which is what HF's conversion does.
//
// Why it encodes relative position: a rotation R(α) is orthogonal and
// R(α)ᵀR(β) = R(β − α), so a query at position p and a key at position s meet
// in the attention's dot product as ⟨R(pθ)q, R(sθ)k⟩ = ⟨q, R((s − p)θ)k⟩: the
// score depends on s − p and on nothing else of the positions.
//
// Backward: each pair is multiplied by R(p_t θ_i), so dx = Rᵀ dy, the
// rotation by the opposite angle:
//
//   dx_i        =  dy_i · cos(p_t θ_i) + dy_{i+half} · sin(p_t θ_i)
//   dx_{i+half} = −dy_i · sin(p_t θ_i) + dy_{i+half} · cos(p_t θ_i)
//
// Saved for backward: the cos and sin tables [T, half], nothing of x. The
// angles are computed in double and rounded once, so position 100,000 is as
// precise as position 1.
#include <cstdint>
#include <vector>

#include "rmsgrad/autograd/var.h"

namespace rg {

// x [B, T, H, Dh] → [B, T, H, Dh]; row t at positions[t] (one per row,
// shared by every batch item).
Var rotary(const Var& x, const std::vector<int64_t>& positions, float base = 10000.0f);
// Rows at first_position, first_position + 1, …: a whole sequence (0), or the
// positions a cached decoder appends (the number it holds already).
Var rotary(const Var& x, int64_t first_position = 0, float base = 10000.0f);

}  // namespace rg
