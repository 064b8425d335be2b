// Links against the installed rmsgrad and checks one gradient.
#include <rmsgrad/rmsgrad.h>

#include <cstdio>

int main() {
  rg::Var x = rg::parameter(rg::Tensor::from(rg::Shape{3}, {1, 2, 3}));
  rg::Var loss = rg::sum(rg::square(x));
  loss.backward();
  std::printf("consumer: loss %.1f, dloss/dx = %s\n", loss.item(), x.grad().str().c_str());
  return x.grad().to_vector() == std::vector<float>{2, 4, 6} ? 0 : 1;
}
