// Links against the installed rmsgrad, checks one gradient, and deals out a
// batch of CIFAR-10-shaped images with the installed reader's synthetic
// stand-in (rmsgrad::cifar10) through the library's DataLoader.
#include <rmsgrad/experiments/cifar10/cifar_data.h>
#include <rmsgrad/rmsgrad.h>

#include <cstdio>

int main() {
  rg::Var x = rg::parameter(rg::Tensor::from(rg::Shape{3}, {1, 2, 3}));
  rg::Var loss = rg::sum(rg::square(x));
  loss.backward();
  std::printf("consumer: loss %.1f, dloss/dx = %s\n", loss.item(), x.grad().str().c_str());

  const rg::cifar::ImageSet images = rg::cifar::synthetic(20, 1);
  const rg::LabelledTensors data{images.images, images.labels};
  rg::DataLoader loader(data, 8, {.seed = 1});
  const rg::LabelledBatch batch = loader.next();
  std::printf("consumer: a CIFAR-10-shaped batch %s\n", batch.inputs.shape().str().c_str());
  const bool ok = x.grad().to_vector() == std::vector<float>{2, 4, 6} && batch.inputs.shape() == rg::Shape{8, 3, 32, 32};
  return ok ? 0 : 1;
}
