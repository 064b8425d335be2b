// NumPy .npy files: the input is the --features file of the order_embedding
// driver, read by read_npy_matrix.
#include "rmsgrad/experiments/common/npy.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rg::fuzz::write_input("features.npy", data, size);
  rg::fuzz::expect_clean([&] { rg::read_npy_matrix(path); });
  return 0;
}
