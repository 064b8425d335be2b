// CIFAR-10 image folders decoded by stb_image: the input is one image file,
// placed in each of the ten class folders train/c0 … train/c9 so that the
// reader gets past its folder checks and decodes it, then read by
// cifar::load_splits as the cifar10 driver reads a --data folder.
#include <string>

#include "rmsgrad/experiments/cifar10/cifar_data.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rg::fuzz::clear_scratch();
  for (int c = 0; c < 10; ++c)
    rg::fuzz::write_input("images/train/c" + std::to_string(c) + "/image.png", data, size);
  const std::string folder = (rg::fuzz::scratch_dir() / "images").string();
  rg::fuzz::expect_clean([&] { rg::cifar::load_splits(folder, 1, 0, 0); });
  return 0;
}
