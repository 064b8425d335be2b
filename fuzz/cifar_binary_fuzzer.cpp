// CIFAR-10 binary batches: the input is data_batch_1.bin of a --data folder,
// read by cifar::load_splits as the cifar10 driver reads it (one image held
// out for validation).
#include "rmsgrad/experiments/cifar10/cifar_data.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader writes nothing and the harness rewrites the same one file, so
  // there is nothing to clear between inputs.
  rg::fuzz::write_input("batches/data_batch_1.bin", data, size);
  const std::string folder = (rg::fuzz::scratch_dir() / "batches").string();
  rg::fuzz::expect_clean([&] { rg::cifar::load_splits(folder, 1, 0, 0); });
  return 0;
}
