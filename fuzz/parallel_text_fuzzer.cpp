// Parallel text, plain or gzip: the input holds both sides, cut where the
// first two bytes say; each side is written to its own file and read by
// read_parallel_text, as the rnnsearch driver reads --train-src and
// --train-tgt (read_lines underneath, zlib for .gz).
#include <algorithm>

#include "rmsgrad/experiments/translation/translation_data.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t cut = std::min<size_t>(size - 2, static_cast<size_t>(data[0]) << 8 | data[1]);
  const std::string source = rg::fuzz::write_input("train.de.gz", data + 2, cut);
  const std::string target = rg::fuzz::write_input("train.en.gz", data + 2 + cut, size - 2 - cut);
  rg::fuzz::expect_clean([&] { rg::read_parallel_text(source, target); });
  return 0;
}
