// Links against the installed rmsgrad, checks one gradient, and deals out a
// batch of CIFAR-10-shaped images without labels through the DataLoader.
#include <rmsgrad/rmsgrad.h>

#include <cstdio>

int main() {
  rg::Var x = rg::parameter(rg::Tensor::from(rg::Shape{3}, {1, 2, 3}));
  rg::Var loss = rg::sum(rg::square(x));
  loss.backward();
  std::printf("consumer: loss %.1f, dloss/dx = %s\n", loss.item(), x.grad().str().c_str());

  rg::Generator gen(1);
  const rg::Tensor images = rg::uniform(rg::Shape{20, 3, 32, 32}, 0.0f, 1.0f, gen);  // a dataset without labels
  rg::DataLoader loader(images, 8, {.seed = 1});
  const rg::LabelledBatch batch = loader.next();
  std::printf("consumer: a CIFAR-10-shaped batch %s without labels\n", batch.inputs.shape().str().c_str());
  const bool ok = x.grad().to_vector() == std::vector<float>{2, 4, 6} && batch.inputs.shape() == rg::Shape{8, 3, 32, 32} &&
                  batch.labels.values.empty();
  return ok ? 0 : 1;
}
