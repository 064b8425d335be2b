// Archives through libarchive (.tar, .tar.gz, .tar.xz, .zip, ...): the input
// is the --data file of the cifar10 driver, read by cifar::load_splits, which
// walks it with for_each_archive_file and decodes the train/<class>/ images
// it holds.
#include "rmsgrad/experiments/cifar10/cifar_data.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader writes nothing and the harness rewrites the same one file, so
  // there is nothing to clear between inputs.
  const std::string path = rg::fuzz::write_input("data.archive", data, size);
  rg::fuzz::expect_clean([&] { rg::cifar::load_splits(path, 1, 0, 0); });
  return 0;
}
