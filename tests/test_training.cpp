// End-to-end: a small network learns XOR, and a 1,000-step training loop
// keeps its resident memory steady (the tape releases every step).
#include <doctest/doctest.h>

#include <fstream>
#include <unistd.h>

#include "rmsgrad/rmsgrad.h"

using namespace rg;

namespace {

struct Mlp {  // x [N, 2] → tanh(x W1 + b1) [N, H] → logits [N, 2]
  Var w1, b1, w2, b2;
  Mlp(int64_t hidden, Generator& gen)
      : w1(parameter(normal(Shape{2, hidden}, 0.0f, 1.0f, gen))),
        b1(parameter(Tensor::zeros(Shape{hidden}))),
        w2(parameter(normal(Shape{hidden, 2}, 0.0f, 1.0f / std::sqrt(float(hidden)), gen))),
        b2(parameter(Tensor::zeros(Shape{2}))) {}
  Var operator()(const Var& x) const { return matmul(tanh(matmul(x, w1) + b1), w2) + b2; }
  void sgd_step(float lr) {
    for (Var* p : {&w1, &b1, &w2, &b2}) {
      p->value().add_(p->grad(), -lr);
      p->zero_grad();
    }
  }
};

double resident_mb() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

}  // namespace

TEST_CASE("an MLP learns XOR to near-zero loss") {
  Generator gen(42);
  Mlp net(8, gen);
  Var x = constant(Tensor::from(Shape{4, 2}, {0, 0, 0, 1, 1, 0, 1, 1}));
  Indices y({0, 1, 1, 0});
  float first = 0, last = 0;
  for (int step = 0; step < 2000; ++step) {
    Var loss = cross_entropy(net(x), y);
    if (step == 0) first = loss.item();
    last = loss.item();
    loss.backward();
    net.sgd_step(0.5f);
    tape().clear();
  }
  MESSAGE("XOR cross-entropy: " << first << " -> " << last);
  CHECK(first > 0.5f);
  CHECK(last < 0.01f);
  NoGradGuard no_grad;
  Tensor logits = net(x).value();
  for (int i = 0; i < 4; ++i) CHECK((logits.at({i, 1}) > logits.at({i, 0})) == (y.values[i] == 1));
}

TEST_CASE("resident memory is steady over 1,000 training steps") {
  Generator gen(1);
  Mlp net(256, gen);
  Var x = constant(uniform(Shape{512, 2}, -1.0f, 1.0f, gen));
  std::vector<int32_t> labels(512);
  for (int i = 0; i < 512; ++i) labels[i] = (x.value().at({i, 0}) * x.value().at({i, 1}) > 0) ? 1 : 0;
  Indices y(labels);
  double after_warmup = 0, at_end = 0;
  for (int step = 1; step <= 1000; ++step) {
    Var loss = cross_entropy(net(x), y);
    loss.backward();
    net.sgd_step(0.1f);
    tape().clear();
    if (step == 100) after_warmup = resident_mb();
  }
  at_end = resident_mb();
  MESSAGE("resident memory after step 100: " << after_warmup << " MB, after step 1000: " << at_end << " MB");
  CHECK(tape().size() == 0);
#ifdef __SANITIZE_ADDRESS__
  // Under AddressSanitizer every free()d block waits in its quarantine (up
  // to 256 MB) before it is reused, so resident memory grows with the small
  // blocks a step frees until the quarantine is full, leak or no leak. That
  // build checks leaks with LeakSanitizer instead.
  MESSAGE("resident-memory bound not checked under AddressSanitizer (its quarantine holds freed blocks)");
#else
  // One step allocates ~3.5 MB of activations and gradients ([512, 256]
  // tensors); a leak of even one of them per step would add ≥ 450 MB.
  CHECK(at_end - after_warmup < 2.0);
#endif
}
