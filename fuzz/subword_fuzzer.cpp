// SentencePiece model files: the input is <out>/subword.model, loaded by the
// Subword class as the rnnsearch driver loads it on --resume and --translate,
// then used to encode and decode a sentence.
#include "rmsgrad/experiments/translation/subword.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = rg::fuzz::write_input("subword.model", data, size);
  rg::fuzz::expect_clean([&] {
    rg::Subword subword(path);
    subword.decode(subword.encode("Zwei Hunde spielen im Schnee."));
  });
  return 0;
}
