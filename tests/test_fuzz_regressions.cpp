// Every input a fuzzer (fuzz/) found a bug with, kept in
// tests/fuzz_regressions/<target>/ and replayed here through the same reader
// call as the harness of that target: it must now end in a clear rg::Error
// (or be read), and the entries below say which error ("(no error)": read).
//
// To add one: copy build-fuzz/artifacts/<target>/<crash-…> into
// tests/fuzz_regressions/<target>/<what it does>.<ext>, fix the reader, and
// name the expected message in kExpected.
//
// No dataset is copied here: the two JPEGs are fuzz/corpus/image_folder's
// gradient32.jpg with the fuzzers' two findings made by hand (the first
// Huffman table's 16 code counts set to 255; the AC table 0 renamed 2, so
// the scan's table is never defined), where the fuzzer had mutated a CIFAR-10
// image.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/cifar10/cifar_data.h"
#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/train/training_progress.h"
#include "rmsgrad/experiments/translation/subword.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

const fs::path kRegressions = fs::path(RG_TEST_REFERENCE_DIR).parent_path() / "fuzz_regressions";

// file name → a piece of the message its reader must give.
const std::map<std::string, std::string> kExpected = {
    {"idat-claims-1.4GB.png", "the file is truncated: it ends before the image does"},
    {"huffman-table-of-4080-codes.jpg", "Bogus Huffman table definition"},
    // Decoded: where a scan names a Huffman table the file never defines,
    // libjpeg-turbo takes the standard one, as Motion-JPEG files need (stb_image
    // 2.27 decoded with an uninitialised table and read out of bounds).
    {"scan-names-undefined-huffman-table.jpg", "(no error)"},
    {"empty-piece.model", "SentencePiece cannot build its tables from it"},
    {"negative-float-offset.safetensors", "has data_offsets [-1.48]; expected whole numbers >= 0"},
};

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The harnesses' reader calls (fuzz/<target>_fuzzer.cpp), on a file.
void replay(const std::string& target, const fs::path& input, const fs::path& scratch) {
  const std::string bytes = read_bytes(input);
  if (target == "image_folder") {
    for (int c = 0; c < 10; ++c) {
      const fs::path dir = scratch / "images" / "train" / ("c" + std::to_string(c));
      fs::create_directories(dir);
      std::ofstream(dir / "image.png", std::ios::binary) << bytes;
    }
    cifar::load_splits((scratch / "images").string(), 1, 0, 0);
    return;
  }
  if (target == "checkpoint") {
    const fs::path file = scratch / "checkpoint.safetensors";
    std::ofstream(file, std::ios::binary) << bytes;
    Checkpoint checkpoint = load_checkpoint(file.string());
    read_training_progress(checkpoint.metadata, file.string());
    restore_tensors(checkpoint, "param.", {{"w", Tensor::zeros(Shape{2, 3})}});
    return;
  }
  if (target == "subword") {
    const fs::path model = scratch / "subword.model";
    std::ofstream(model, std::ios::binary) << bytes;
    Subword subword(model.string());
    subword.decode(subword.encode("Zwei Hunde spielen im Schnee."));
    return;
  }
  FAIL("no replay for fuzz target ", target, " (add it to tests/test_fuzz_regressions.cpp)");
}

}  // namespace

TEST_CASE("fuzz regressions: every input that once crashed a reader now gets a clear error") {
  REQUIRE(fs::is_directory(kRegressions));
  int replayed = 0;
  for (const auto& target : fs::directory_iterator(kRegressions))
    for (const auto& input : fs::directory_iterator(target.path())) {
      const std::string name = input.path().filename().string();
      CAPTURE(name);
      test::TempDir scratch("fuzz_regression");
      const std::string target_name = target.path().filename().string();
      const std::string message = test::error_of([&] { replay(target_name, input.path(), scratch.path); });
      const auto expected = kExpected.find(name);
      REQUIRE(expected != kExpected.end());
      CHECK(message.find(expected->second) != std::string::npos);
      ++replayed;
    }
  CHECK(replayed == static_cast<int>(kExpected.size()));
}
