// The smallest real training demo: a two-layer network learns two
// interleaved spirals (not linearly separable) with plain gradient descent,
// written directly against the op API.
#include <cmath>
#include <cstdio>

#include "rmsgrad/rmsgrad.h"

using namespace rg;

int main() {
  const int64_t points = 400, hidden = 64;
  Generator gen(0);

  // Two spirals, one per class, with a little noise.
  std::vector<float> xs;
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < points; ++i) {
    int cls = static_cast<int>(i % 2);
    float t = 0.25f + 3.0f * static_cast<float>(i / 2) / (points / 2);
    float angle = 2.2f * t + cls * float(M_PI);
    xs.push_back(t * std::cos(angle) / 3.25f + gen.normal(0.0f, 0.02f));
    xs.push_back(t * std::sin(angle) / 3.25f + gen.normal(0.0f, 0.02f));
    labels.push_back(cls);
  }
  Var x = constant(Tensor::from(Shape{points, 2}, xs));
  Indices y(labels);

  Var w1 = parameter(normal(Shape{2, hidden}, 0.0f, 3.0f, gen)), b1 = parameter(Tensor::zeros(Shape{hidden}));
  Var w2 = parameter(normal(Shape{hidden, hidden}, 0.0f, 1.0f / std::sqrt(float(hidden)), gen));
  Var b2 = parameter(Tensor::zeros(Shape{hidden}));
  Var w3 = parameter(normal(Shape{hidden, 2}, 0.0f, 1.0f / std::sqrt(float(hidden)), gen));
  Var b3 = parameter(Tensor::zeros(Shape{2}));
  auto forward = [&] { return matmul(tanh(matmul(tanh(matmul(x, w1) + b1), w2) + b2), w3) + b3; };

  std::printf("two spirals, %lld points, MLP 2-%lld-%lld-2, gradient descent\n", (long long)points,
              (long long)hidden, (long long)hidden);
  for (int step = 0; step <= 3000; ++step) {
    Var logits = forward();
    Var loss = cross_entropy(logits, y);
    if (step % 500 == 0) {
      int correct = 0;
      for (int64_t i = 0; i < points; ++i)
        correct += (logits.value().at({i, 1}) > logits.value().at({i, 0})) == (labels[i] == 1);
      std::printf("step %5d  loss %.4f  accuracy %.1f%%\n", step, loss.item(), 100.0 * correct / points);
    }
    loss.backward();
    for (Var* p : {&w1, &b1, &w2, &b2, &w3, &b3}) {
      p->value().add_(p->grad(), -0.5f);
      p->zero_grad();
    }
    tape().clear();
  }
  return 0;
}
