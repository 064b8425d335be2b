// Children's Book Test: the input is read both ways the attentive_reader
// driver reads CBT: as a question file (--format cbt, read_cbt_questions) and
// as book text to build cloze questions from (--format cbt-cloze,
// build_cbt_cloze).
#include "rmsgrad/experiments/attentive_reader/reading_data.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rg::fuzz::write_input("cbt_NE_train.txt", data, size);
  rg::fuzz::expect_clean([&] {
    for (auto& q : rg::reader::read_cbt_questions(path)) rg::reader::anonymize(q);
  });
  rg::reader::ClozeOptions options;
  options.context_sentences = 3;  // small windows, so short inputs make questions
  rg::fuzz::expect_clean([&] {
    for (auto& q : rg::reader::build_cbt_cloze(path, options)) rg::reader::anonymize(q);
  });
  return 0;
}
