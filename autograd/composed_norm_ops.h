#pragma once
// The normalizations composed from the public differentiable ops, the way
// the paper's implementations and the 2019 frameworks wrote them: each step a
// separate op, a separate pass over memory and a separate tape node with its
// own backward. Same signatures and same functions as the fused ops of
// norm_ops.h and batch_norm.h; the norms' modules pick one or the other
// (NormOptions::impl, `--norm-impl fused|composed` on every driver).
//
//   LayerNorm  mean → subtract → square → mean → add ε → rsqrt → multiply
//              → multiply by the gain → add the bias            9 ops
//   RMSNorm    square → mean → add ε → rsqrt → multiply
//              → multiply by the gain (→ add the bias)           6 ops
//   pRMSNorm   slice the first k units, then RMSNorm's chain on the
//              slice's statistic, multiplying the whole row      7 ops
//   L2-Norm    RMSNorm's chain with a sum instead of the mean    6 ops
//   BatchNorm  LayerNorm's chain with the statistics taken over the batch
//              (and H·W) instead of the row; running statistics updated
//              outside the tape
//
// The cost is what they do not share with the fused kernels: every
// intermediate is a tensor the size of the input, written once in the
// forward pass, kept for its node's backward and read again there, and each
// backward is its own pass. LayerNorm's chain is about half again as long as
// RMSNorm's, and its two extra ops (the mean and the subtraction) are
// full passes; that is where the paper's speedups come from (experiments/README.md, "Where
// the paper's speedup comes from"). Values and gradients agree with the
// fused ops to float32 rounding (tests/test_norms.cpp, test_composed_norms.cpp).
#include "rmsgrad/autograd/batch_norm.h"
#include "rmsgrad/autograd/norm_ops.h"

namespace rg {

Var composed_rms_norm(const Var& x, const Var& gain, const Var& bias, const RmsNormConfig& config,
                      NormLayout layout = NormLayout::Features);

Var composed_layer_norm(const Var& x, const Var& gain, const Var& bias, float eps,
                        NormLayout layout = NormLayout::Features);

Var composed_batch_norm(const Var& x, const Var& gain, const Var& bias, BatchNormState& state, bool training);

}  // namespace rg
