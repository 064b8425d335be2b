// bAbI task files: the input is the --data file of the attentive_reader
// driver with --format babi, read by read_babi and anonymised as the driver
// does.
#include "rmsgrad/experiments/attentive_reader/reading_data.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rg::fuzz::write_input("qa1_train.txt", data, size);
  rg::fuzz::expect_clean([&] {
    auto questions = rg::reader::read_babi(path);
    for (auto& q : questions) rg::reader::anonymize(q);
    rg::reader::hold_out_tenth(std::move(questions));
  });
  return 0;
}
