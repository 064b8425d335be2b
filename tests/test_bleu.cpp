// BLEU against sacreBLEU's published scores, 13a tokenisation, and the text
// readers' errors (line counts, invalid UTF-8, gzip).
#include <doctest/doctest.h>

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/bleu.h"
#include "rmsgrad/experiments/common/text_file.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;

TEST_CASE("corpus BLEU equals sacreBLEU's published scores") {
  // sacreBLEU's README example and test suite (test/test_bleu.py):
  // corpus_bleu(hyps, refs) = 48.530827 with the default settings, printed as
  // "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)".
  std::vector<std::string> hyps = {"The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."};
  std::vector<std::vector<std::string>> refs = {
      {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
      {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};
  BleuScore s = corpus_bleu(hyps, refs);
  CHECK(s.score == doctest::Approx(48.530827).epsilon(1e-8));
  CHECK(s.str() == "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  CHECK(s.signature() == "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0");
  // Empty hypotheses are scored, not dropped: 0.
  CHECK(corpus_bleu({"", "", ""}, refs).score == 0.0);
  // compute_bleu([9, 7, 5, 3], [10, 8, 6, 4], 11, 11) = 0.8375922397 (×100).
  CHECK(bleu_from_statistics({9, 7, 5, 3}, {10, 8, 6, 4}, 11, 11).score / 100 == doctest::Approx(0.8375922397).epsilon(1e-9));
  CHECK(corpus_bleu({"a b c d"}, {{"a b c d"}}).score == doctest::Approx(100.0));
  // Exponential smoothing: no 4-gram match gives precision 100/(2·total).
  BleuScore smooth = bleu_from_statistics({4, 2, 1, 0}, {6, 5, 4, 3}, 6, 8);
  CHECK(smooth.precisions[3] == doctest::Approx(100.0 / 6.0));
  CHECK(smooth.brevity_penalty == doctest::Approx(std::exp(1.0 - 8.0 / 6.0)));
}

TEST_CASE("13a tokenisation") {
  CHECK(tokenize_13a("Hello, world!") == "Hello , world !");
  CHECK(tokenize_13a("It costs 3.5-4 dollars, e.g. now.") == "It costs 3.5 - 4 dollars , e . g . now .");
  CHECK(tokenize_13a("&quot;quoted&quot; &amp; more") == "\" quoted \" & more");
  CHECK(tokenize_13a("  spaced   out  ") == "spaced out");
  CHECK(tokenize_13a("1,000.5 units") == "1,000.5 units");
  CHECK(tokenize_13a("Ünïcode café.") == "Ünïcode café .");
}

TEST_CASE("text files: gzip, UTF-8 and line-count errors name file and line") {
  fs::path dir = fs::temp_directory_path() / ("rg_text_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "a.txt") << "ein Satz\nzwei\n";
  std::ofstream(dir / "b.txt") << "one\n";
  std::ofstream(dir / "bad.txt") << "fine\nbad \xC3\x28 byte\n";
  gzFile gz = gzopen((dir / "c.txt.gz").c_str(), "wb");
  gzputs(gz, "gzipped line\nsecond\n");
  gzclose(gz);
  CHECK(read_lines((dir / "a.txt").string()) == std::vector<std::string>{"ein Satz", "zwei"});
  CHECK(read_lines((dir / "c.txt.gz").string()) == std::vector<std::string>{"gzipped line", "second"});
  const std::string expected = (dir / "bad.txt").string() + ":2: invalid UTF-8 at byte 5 of the line";
  CHECK_THROWS_WITH_AS(read_lines((dir / "bad.txt").string()), expected.c_str(), Error);
  CHECK_THROWS_WITH_AS(read_parallel((dir / "a.txt").string(), (dir / "b.txt").string()),
                       doctest::Contains("has 2 lines but"), Error);
  CHECK_THROWS_WITH_AS(read_lines((dir / "none.txt").string()), doctest::Contains("no such file"), Error);
  CHECK(invalid_utf8_offset("\xE0\x80\x80") == 0);  // overlong
  CHECK(invalid_utf8_offset("\xED\xA0\x80") == 0);  // surrogate
  CHECK(invalid_utf8_offset("ok \xF0\x9F\x98\x80") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("build/bin/bleu HYP REF REF prints the score and signature as sacrebleu does") {
  test::TempDir tmp("bleu_cli");
  auto write = [&](const char* name, const char* text) {
    std::ofstream(tmp.path / name) << text;
    return (tmp.path / name).string();
  };
  const std::string hyp = write("hyp.txt", "The dog bit the man.\nIt wasn't surprising.\nThe man had just bitten him.\n");
  const std::string ref1 = write("ref1.txt", "The dog bit the man.\nIt was not unexpected.\nThe man bit him first.\n");
  const std::string ref2 =
      write("ref2.txt", "The dog had bit the man.\nNo one was surprised.\nThe man had bitten the dog.\n");
  std::string output;
  REQUIRE(test::run_program(RG_BLEU_BIN, hyp + " " + ref1 + " " + ref2, tmp.path, output) == 0);
  CHECK(output.find("\"score\": 48.5,") != std::string::npos);
  CHECK(output.find("\"signature\": \"nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0\"") !=
        std::string::npos);
  REQUIRE(test::run_program(RG_BLEU_BIN, "--format text " + hyp + " " + ref1 + " " + ref2, tmp.path, output) == 0);
  CHECK(output ==
        "BLEU|nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0 = 48.5 82.4/50.0/45.5/37.5 "
        "(BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)\n");
  // Errors: one line naming the file, non-zero exit.
  const std::string short_ref = write("short.txt", "The dog bit the man.\n");
  CHECK(test::run_program(RG_BLEU_BIN, hyp + " " + short_ref, tmp.path, output) == 1);
  CHECK(output.find("short.txt has 1 lines") != std::string::npos);
  CHECK(test::run_program(RG_BLEU_BIN, hyp + " " + (tmp.path / "missing.txt").string(), tmp.path, output) == 1);
  CHECK(output.find("missing.txt") != std::string::npos);
  CHECK(test::run_program(RG_BLEU_BIN, "--bogus " + hyp, tmp.path, output) == 2);
}
