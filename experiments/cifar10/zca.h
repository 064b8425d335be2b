#pragma once
// ZCA whitening (Krizhevsky 2009; the preprocessing of Salimans & Kingma's
// CIFAR code, which the paper's CIFAR experiment uses):
//
//   μ = mean of the training rows x (3072 pixels each)
//   Σ = (X − μ)ᵀ (X − μ) / N                    the pixel covariance
//   Σ = U diag(λ) Uᵀ                            LAPACK's symmetric eigensolver
//   W = U diag(1 / sqrt(λ + reg)) Uᵀ            reg = 1e-5
//   x_white = (x − μ) W
//
// W is symmetric, and unlike PCA whitening it keeps the result close to the
// image (it rotates back), so the conv net still sees local structure.
// Fitting costs two 3072-wide products over the whole training set and an
// eigendecomposition of 3072×3072 (tens of seconds), so the fitted (μ, W) is
// cached in a file named by a hash of the training data.
#include <string>

#include "rmsgrad/core/tensor.h"

namespace rg::cifar {

struct Zca {
  Tensor mean;       // [D]
  Tensor transform;  // [D, D], symmetric
};

// rows [N, D] → the fitted transform.
Zca fit_zca(const Tensor& rows, double regularization = 1e-5);
// Applies in place: rows ← (rows − μ) W (rows [N, D]).
void apply_zca(const Zca& zca, Tensor& rows);

// Fits or loads from `cache_dir` (created if needed; empty = no cache).
// `log` receives one line saying which happened.
Zca fit_zca_cached(const Tensor& rows, const std::string& cache_dir, std::string& log);

}  // namespace rg::cifar
