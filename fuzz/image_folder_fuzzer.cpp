// CIFAR-10 image folders, decoded by libpng and libjpeg-turbo: the input is
// one image file, placed in each of the ten class folders train/c0 … train/c9
// so that the reader gets past its folder checks and decodes it, then read by
// cifar::load_splits as the cifar10 driver reads a --data folder.
#include <string>

#include "rmsgrad/experiments/cifar10/cifar_data.h"
#include "fuzz/fuzz_input.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path images = rg::fuzz::scratch_dir() / "images";
  // c1 … c9 hold hard links to c0's file, made once: write_input rewrites
  // that file in place, so each input is one write instead of ten files
  // (and ten folders) removed and made again. To the reader they are ten
  // regular files with the input's bytes, as before. It writes nothing, so
  // nothing of one input is left for the next.
  rg::fuzz::write_input("images/train/c0/image.png", data, size);
  static const bool linked = [&] {
    for (int c = 1; c < 10; ++c) {
      const fs::path dir = images / "train" / ("c" + std::to_string(c));
      fs::create_directories(dir);
      fs::create_hard_link(images / "train" / "c0" / "image.png", dir / "image.png");
    }
    return true;
  }();
  (void)linked;
  rg::fuzz::expect_clean([&] { rg::cifar::load_splits(images.string(), 1, 0, 0); });
  return 0;
}
