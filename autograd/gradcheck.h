#pragma once
// Gradient checking by central differences.
//
// The function under test maps input tensors to one output tensor y. To
// compare every input's gradient with one backward pass, y is reduced to the
// scalar L = Σ_i r_i · y_i with a fixed random projection r (normal, seeded):
// unlike L = Σ y, a projection does not let symmetric errors cancel, and it
// exercises every output element with a different weight.
//
//   analytic  dL/dx_j: one backward pass seeded with dL/dy = r
//   numerical dL/dx_j ≈ (L(x_j + h) - L(x_j - h)) / 2h, L summed in double
//
// An element passes when |a - n| ≤ atol + rtol·|n|. The function runs in
// float32, so n carries an error of about (float eps · |L|) / h; with h = 1e-3
// and inputs and outputs of order 1, that is ~1e-4, and the O(h²) truncation
// error is ~1e-6 for smooth ops. Hence the defaults atol = 5e-3, rtol = 1e-2.
// Ops with kinks (relu, abs, max) need inputs kept away from the kink by more
// than h; the tests choose such inputs.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rmsgrad/autograd/var.h"

namespace rg {

struct GradCheckOptions {
  double step = 1e-3;
  double atol = 5e-3;
  double rtol = 1e-2;
  uint64_t seed = 1234;  // of the projection r
};

struct GradCheckResult {
  bool ok = true;
  double max_abs_error = 0.0;
  std::string report;  // names the first failing input and element
};

using GradCheckFn = std::function<Var(const std::vector<Var>&)>;

// Checks the gradient of f with respect to every input in `inputs`
// (each input becomes a Var that requires a gradient).
GradCheckResult gradcheck(const GradCheckFn& f, const std::vector<Tensor>& inputs,
                          const GradCheckOptions& options = {});

}  // namespace rg
