#include "rmsgrad/autograd/gradcheck.h"

#include <cmath>

#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/random.h"

namespace rg {

namespace {

double projected(const Tensor& y, const Tensor& r) {
  double acc = 0.0;
  for (int64_t i = 0; i < y.numel(); ++i) acc += static_cast<double>(y.data()[i]) * r.data()[i];
  return acc;
}

// f at perturbed inputs, checked to give a value of the first call's shape.
Tensor evaluate(const GradCheckFn& f, const std::vector<Var>& inputs, const Shape& shape) {
  const Var y = f(inputs);
  check(y.defined() && y.shape() == shape, "gradcheck: the function returned {} for perturbed inputs, {} before",
        shape_of(y), shape);
  return y.value();
}

}  // namespace

GradCheckResult gradcheck(const GradCheckFn& f, const std::vector<Tensor>& inputs,
                          const GradCheckOptions& options) {
  GradCheckResult result;
  for (size_t k = 0; k < inputs.size(); ++k)
    check(inputs[k].defined(), "gradcheck: input {} is an undefined tensor", k);

  // Analytic gradients: one backward pass seeded with the projection. The
  // graph it builds is freed with `y` and `vars`; the caller's graphs on the
  // same tape are left as they were.
  std::vector<Var> vars;
  for (const Tensor& t : inputs) {
    vars.emplace_back(t.clone(), true);
    vars.back().node()->gradient_used = true;  // read below, not left to an optimizer
  }
  Var y = f(vars);
  check(y.defined(), "gradcheck: the function returned an undefined Var");
  Generator gen(options.seed);
  Tensor r = normal(y.shape(), 0.0f, 1.0f, gen);
  Tape::current().backward(y, r);

  // Numerical gradients, one element at a time, without recording.
  NoGradGuard no_grad;
  std::vector<Var> probe;
  for (const Tensor& t : inputs) probe.emplace_back(t.clone(), false);
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor analytic = vars[k].has_grad() ? vars[k].grad() : Tensor::zeros(inputs[k].shape());
    float* x = probe[k].value().data();
    for (int64_t j = 0; j < inputs[k].numel(); ++j) {
      const float saved = x[j];
      x[j] = saved + static_cast<float>(options.step);
      double plus = projected(evaluate(f, probe, y.shape()), r);
      x[j] = saved - static_cast<float>(options.step);
      double minus = projected(evaluate(f, probe, y.shape()), r);
      x[j] = saved;
      // Divide by the step actually taken after rounding to float.
      double h2 = static_cast<double>(saved + static_cast<float>(options.step)) -
                  static_cast<double>(saved - static_cast<float>(options.step));
      double numeric = (plus - minus) / h2;
      double a = analytic.data()[j];
      double err = std::fabs(a - numeric);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (!(err <= options.atol + options.rtol * std::fabs(numeric)) && result.ok) {
        result.ok = false;
        result.report = fmt::format("input {} {} element {}: analytic {:.6g}, numerical {:.6g}", k,
                                    inputs[k].shape(), j, a, numeric);
      }
    }
  }
  return result;
}

}  // namespace rg
