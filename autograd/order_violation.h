#pragma once
// The order-violation penalty of order-embeddings (Vendrov et al. 2016,
// "Order-Embeddings of Images and Language"), for every pair at once.
//
// Order-embeddings map captions and images into the non-negative orthant and
// read the partial order "x is more specific than y" as x ≥ y in every
// coordinate: the origin is the most general point, and an image lies above
// (is more specific than) each of its captions. A pair (caption s, image im)
// is consistent with that order when s ≤ im everywhere, and the penalty
// measures by how much it is not:
//
//   E(s, im) = ‖max(0, s − im)‖² = Σ_d max(0, s_d − im_d)²
//
// It is zero for a consistent pair, and unlike a distance it is asymmetric.
//
// order_violation(s [Bs, D], im [Bi, D]) → E [Bs, Bi], E[i, j] = E(s_i, im_j),
// fused: the contrastive loss needs all Bs·Bi pairs, and composing it from
// broadcast ops would build several [Bs, Bi, D] tensors (64 MB each for the
// paper's 128 × 128 × 1024). With t_ijd = max(0, s_id − im_jd) and G = dL/dE:
//
//   dL/ds_id  =  2 Σ_j G_ij t_ijd
//   dL/dim_jd = −2 Σ_i G_ij t_ijd
//
// The max has a kink at s_id = im_jd, where its derivative is taken as 0.
// Nothing is saved for backward beyond the inputs: t is recomputed.
#include "rmsgrad/autograd/var.h"

namespace rg {

Var order_violation(const Var& s, const Var& im);

}  // namespace rg
