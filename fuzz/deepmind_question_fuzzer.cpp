// DeepMind CNN / Daily Mail .question files: the input is the one file of a
// --data folder, read by read_deepmind_dir with the paper's top-4 sentence
// filter, as the attentive_reader driver reads --format deepmind.
#include "rmsgrad/experiments/attentive_reader/reading_data.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rg::fuzz::write_input("questions/0.question", data, size);
  const std::string folder = (rg::fuzz::scratch_dir() / "questions").string();
  rg::fuzz::expect_clean([&] {
    auto questions = rg::reader::read_deepmind_dir(folder, 4, 0);
    for (auto& q : questions) rg::reader::anonymize(q);
  });
  return 0;
}
