// The language model driver (experiments/lm): the CBT books split by book,
// the synthetic sentences learnt, an exact resume, a sample written, clear
// errors, and a short run on the real books when ../shared/data is there.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "rmsgrad/core/gemm.h"
#include "rmsgrad/experiments/lm/char_text.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;
using nlohmann::json;
using test::metric_lines;
using test::TempDir;

namespace {

int run_driver(const std::string& args, const fs::path& dir, std::string& output) {
  return test::run_program(RG_LM_BIN, args, dir, output);
}

const std::string kSmall =
    "--layers 2 --model-size 32 --heads 2 --ffn 86 --context 32 --batch 8 --lr 0.003 --threads 1 --log-every 1 "
    "--synthetic-chars 20000 --valid-chars 2048 --sample-chars 40 ";

// Two CBT-style files: a title line opens each book.
void write_books(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream valid(dir / "cbt_valid.txt"), test(dir / "cbt_test.txt");
  valid << "_BOOK_TITLE_ : First_Book.txt.out\nOnce upon a time .\nThe end .\n"
        << "_BOOK_TITLE_ : Held_Out.txt.out\nA cat ~ sat .\n";
  test << "_BOOK_TITLE_ : Third_Book.txt.out\nA cat sat .\n";
}

}  // namespace

TEST_CASE("CBT books: nine to train on, one held out, title lines dropped, unseen bytes to id 0") {
  TempDir tmp("lm_books");
  write_books(tmp.path);
  const lm::CharText text = lm::read_cbt_books(tmp.path.string(), "Held_Out");
  CHECK(text.decode(text.train) == "Once upon a time .\nThe end .\nA cat sat .\n");
  // '~' never occurs in the training books: it reads as the unknown symbol.
  CHECK(text.decode(text.valid) == "A cat ? sat .\n");
  CHECK(text.alphabet.front() == '?');
  CHECK(text.vocab() == static_cast<int64_t>(text.alphabet.size()));
  CHECK_THROWS_WITH_AS(lm::read_cbt_books(tmp.path.string(), "No_Such_Book"),
                       doctest::Contains("no book named 'No_Such_Book'"), Error);
  CHECK_THROWS_WITH_AS(lm::read_cbt_books((tmp.path / "none").string()), doctest::Contains("cbt_valid.txt"), Error);
}

TEST_CASE("lm driver: learns the synthetic sentences, writes a sample, and resumes bit for bit") {
  TempDir tmp("lm_driver");
  std::string output;
  const fs::path straight = tmp.path / "straight", resumed = tmp.path / "resumed";
  const std::string common = kSmall + "--steps 60 --eval-every 30 ";
  REQUIRE_MESSAGE(run_driver(common + "--out " + straight.string(), tmp.path, output) == 0, output);
  const std::vector<json> valid = metric_lines(straight, "valid");
  REQUIRE(valid.size() == 3);  // steps 0, 30, 60
  // At step 0 every symbol is about equally likely: log2 of the ~28 symbols.
  CHECK(valid.front()["bpc"].get<double>() > 4.0);
  // Sixty steps learn the letters and the spaces of the grammar's words; 3.3 bits is far below the start.
  CHECK_MESSAGE(valid.back()["bpc"].get<double>() < 3.3, output);
  CHECK(valid.back()["bpc"].get<double>() == doctest::Approx(valid.back()["loss"].get<double>() / std::log(2.0)));
  const std::string sample = test::read_file(straight / "sample.txt");
  CHECK(sample.starts_with("the king said"));
  CHECK(sample.size() == std::string("the king said").size() + 40 + 1);

  REQUIRE_MESSAGE(run_driver(common + "--stop-after 25 --out " + resumed.string(), tmp.path, output) == 0, output);
  REQUIRE_MESSAGE(run_driver(common + "--resume --out " + resumed.string(), tmp.path, output) == 0, output);
  const std::vector<json> train = metric_lines(straight, "train"), again = metric_lines(resumed, "train");
  REQUIRE(again.size() == train.size());
  for (size_t i = 0; i < train.size(); ++i)
    CHECK_MESSAGE(again[i]["loss"].get<double>() == train[i]["loss"].get<double>(), "step " << i + 1);
  CHECK(test::read_file(resumed / "sample.txt") == sample);
}

TEST_CASE("lm driver: --precision bf16 trains as f32 does, is recorded, and a resume cannot change it") {
  TempDir tmp("lm_bf16");
  std::string output;
  // Wide enough that the products reach kBf16MinWork (1024 rows × 128 × 128),
  // below which they stay f32.
  const std::string common =
      "--layers 2 --model-size 128 --heads 2 --ffn 344 --context 64 --batch 16 --lr 0.003 --threads 1 "
      "--log-every 1 --synthetic-chars 20000 --valid-chars 2048 --sample-chars 40 --steps 60 --eval-every 30 ";
  const fs::path f32 = tmp.path / "f32", bf16 = tmp.path / "bf16";
  if (!onednn_available()) {
    MESSAGE("bf16 training skipped: this build has no oneDNN (libdnnl-dev); checking the refusal only");
    CHECK(run_driver(common + "--precision bf16 --out " + bf16.string(), tmp.path, output) == 2);
    CHECK(output.find("bf16 products need oneDNN") != std::string::npos);
    CHECK(!fs::exists(bf16));  // refused at the flag, before a run folder is made
    return;
  }
  if (!bf16_products_supported()) {
    MESSAGE("bf16 training skipped: oneDNN has no bf16 kernels for this CPU (AVX-512 or newer); checking the refusal");
    CHECK(run_driver(common + "--precision bf16 --out " + bf16.string(), tmp.path, output) == 2);
    CHECK(output.find("no bf16 kernels for this CPU") != std::string::npos);
    CHECK(!fs::exists(bf16));  // refused at the flag, before a run folder is made
    return;
  }
  REQUIRE_MESSAGE(run_driver(common + "--out " + f32.string(), tmp.path, output) == 0, output);
  REQUIRE_MESSAGE(run_driver(common + "--precision bf16 --stop-after 30 --out " + bf16.string(), tmp.path, output) == 0,
                  output);
  CHECK(run_driver(common + "--precision f32 --resume --out " + bf16.string(), tmp.path, output) == 1);
  CHECK(output.find("precision") != std::string::npos);
  REQUIRE_MESSAGE(run_driver(common + "--precision bf16 --resume --out " + bf16.string(), tmp.path, output) == 0,
                  output);
  CHECK(json::parse(test::read_file(bf16 / "config.json"))["precision"] == "bf16");
  // Another seed in f32: the noise bf16 must stay within.
  const fs::path seed1 = tmp.path / "seed1";
  REQUIRE_MESSAGE(run_driver(common + "--seed 1 --out " + seed1.string(), tmp.path, output) == 0, output);
  const std::vector<json> a = metric_lines(f32, "train"), b = metric_lines(bf16, "train"),
                          c = metric_lines(seed1, "train");
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() == c.size());
  // The largest relative difference from the f32 curve over the 60 steps:
  // bf16's rounding of the products' inputs moves it (it is not f32 under
  // another name), but less than a new seed does, i.e. within the
  // seed-to-seed noise (measured: 0.04 against 0.17).
  double bf16_moves = 0.0, seed_moves = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double f = a[i]["loss"].get<double>();
    bf16_moves = std::max(bf16_moves, std::fabs(b[i]["loss"].get<double>() - f) / f);
    seed_moves = std::max(seed_moves, std::fabs(c[i]["loss"].get<double>() - f) / f);
  }
  CHECK(bf16_moves > 0.0);
  CHECK(bf16_moves < seed_moves);
  CHECK(metric_lines(bf16, "valid").back()["bpc"].get<double>() < 3.3);
}

TEST_CASE("lm driver: bad input is one clear error and a non-zero exit") {
  TempDir tmp("lm_errors");
  std::string output;
  CHECK(run_driver("--no-such-flag", tmp.path, output) == 2);
  CHECK(run_driver("--norm batchnorm", tmp.path, output) == 2);
  CHECK(run_driver(kSmall + "--data " + (tmp.path / "none").string() + " --out " + (tmp.path / "r").string(),
                   tmp.path, output) == 1);
  CHECK(output.find("cbt_valid.txt") != std::string::npos);
  CHECK(run_driver("--model-size 32 --heads 3 --out " + (tmp.path / "r2").string(), tmp.path, output) == 1);
  CHECK(output.find("multiple of heads 3") != std::string::npos);
}

TEST_CASE("lm driver: the CBT books, when ../shared/data is there") {
  const fs::path books = fs::path(RG_SHARED_DATA_DIR) / "cbt" / "CBTest" / "data";
  if (!fs::exists(books / "cbt_valid.txt")) {
    MESSAGE("skipped: no CBT books in " << books.string());
    return;
  }
  TempDir tmp("lm_cbt");
  std::string output;
  const fs::path out = tmp.path / "run";
  REQUIRE_MESSAGE(run_driver(kSmall + "--steps 40 --eval-every 40 --data " + books.string() + " --out " + out.string(),
                             tmp.path, output) == 0,
                  output);
  CHECK(output.find("of 9 books for training") != std::string::npos);
  const std::vector<json> valid = metric_lines(out, "valid");
  REQUIRE(valid.size() == 2);
  CHECK(valid.back()["bpc"].get<double>() < valid.front()["bpc"].get<double>() - 1.0);
}

TEST_CASE("lm driver: the sampling flags are checked against the text before any training") {
  TempDir tmp("lm_sampling_flags");
  std::string output;
  const std::string common = kSmall + "--steps 2 --eval-every 2 ";
  // The synthetic sentences are lowercase: 'T' and '!' are not in the alphabet.
  const fs::path prompt = tmp.path / "prompt";
  CHECK(run_driver(common + "--prompt 'The end!' --out " + prompt.string(), tmp.path, output) == 1);
  CHECK_MESSAGE(output.find("error: --prompt has characters the training text lacks: 'T', '!'") != std::string::npos,
                output);
  CHECK(!fs::exists(prompt / "metrics.jsonl"));  // refused before the first step
  // A byte that is not UTF-8 is named as a byte, and recording the flag is no JSON error.
  CHECK(run_driver(common + "--prompt 'the \xff' --out " + prompt.string(), tmp.path, output) == 1);
  CHECK_MESSAGE(output.find("error: --prompt has characters the training text lacks: byte 0xff;") !=
                    std::string::npos, output);
  CHECK(output.find("json") == std::string::npos);
  CHECK(run_driver(common + "--data '" + (tmp.path / "d\xfe").string() + "' --out " + prompt.string(), tmp.path,
                   output) == 1);
  CHECK_MESSAGE(output.find("d\\xfe") != std::string::npos, output);
  CHECK(output.find("json") == std::string::npos);
  const fs::path top_k = tmp.path / "top_k";
  CHECK(run_driver(common + "--top-k 500 --out " + top_k.string(), tmp.path, output) == 1);
  CHECK_MESSAGE(output.find("error: --top-k 500 is more than the") != std::string::npos, output);
  CHECK(!fs::exists(top_k / "metrics.jsonl"));
  // Without a sample nothing is checked: the flags are not used.
  std::string no_sample = common;
  no_sample.erase(no_sample.find("--sample-chars 40 "), std::string("--sample-chars 40 ").size());
  CHECK(run_driver(no_sample + "--sample-chars 0 --top-k 500 --out " + (tmp.path / "none").string(), tmp.path,
                   output) == 0);
  CHECK(run_driver(no_sample + "--sample-chars 100000000 --out " + (tmp.path / "huge").string(), tmp.path,
                   output) == 2);
  CHECK(output.find("--sample-chars") != std::string::npos);
}

TEST_CASE("lm driver: sample.txt only after a whole run, and never written through a link") {
  TempDir tmp("lm_sample_links");
  std::string output;
  const fs::path run = tmp.path / "run", target = tmp.path / "users_file.txt";
  const std::string common = kSmall + "--steps 4 --eval-every 2 --out " + run.string() + " ";
  REQUIRE_MESSAGE(run_driver(common + "--stop-after 2", tmp.path, output) == 0, output);
  CHECK(!fs::exists(run / "sample.txt"));  // stopped early: no sample
  // A user's file behind links planted at the sample and at the temporary
  // of every file the resumed run writes whole.
  { std::ofstream(target) << "mine\n"; }
  fs::create_symlink(target, run / "sample.txt");
  for (const char* name : {".sample.txt.tmp", ".checkpoint.safetensors.tmp", ".best.safetensors.tmp",
                           ".config.json.tmp", ".metrics.jsonl.tmp"})
    fs::create_symlink(target, run / name);
  REQUIRE_MESSAGE(run_driver(common + "--resume", tmp.path, output) == 0, output);
  CHECK(test::read_file(target) == "mine\n");
  for (const char* name : {".sample.txt.tmp", ".checkpoint.safetensors.tmp", ".config.json.tmp"})
    CHECK_MESSAGE(!fs::exists(fs::symlink_status(run / name)), name);  // removed, never followed
  CHECK(!fs::is_symlink(run / "sample.txt"));
  CHECK(test::read_file(run / "sample.txt").starts_with("the king said"));
}

TEST_CASE("lm driver: a closed standard output does not end a run; a file-size limit is a write error") {
  TempDir tmp("lm_signals");
  std::string output;
  const fs::path piped = tmp.path / "piped";
  // The reader of stdout goes away after one byte: the run goes on, its lines in train.log.
  const std::string pipe = "bash -c '\"$0\" \"$@\" | head -c 1 > /dev/null; exit ${PIPESTATUS[0]}' " +
                           std::string(RG_LM_BIN) + " " + kSmall + "--steps 6 --eval-every 3 --out " + piped.string();
  CHECK_MESSAGE(test::run_program(pipe, "", tmp.path, output) == 0, output);
  CHECK(metric_lines(piped, "valid").size() == 3);
  CHECK(test::read_file(piped / "train.log").find("step        6  valid") != std::string::npos);
  // A limit on file sizes below the checkpoint's: the checkpoint's write
  // fails with a message, exit 1 (not SIGXFSZ), and the earlier checkpoint stays.
  const fs::path limited = tmp.path / "limited";
  const std::string common = kSmall + "--steps 6 --eval-every 3 --out " + limited.string();
  REQUIRE_MESSAGE(run_driver(common + " --stop-after 3", tmp.path, output) == 0, output);
  const std::string before = test::read_file(limited / "checkpoint.safetensors");
  REQUIRE(before.size() > 64 * 1024);
  const std::string capped = "bash -c 'ulimit -f 64; exec \"$0\" \"$@\"' " + std::string(RG_LM_BIN) + " " + common +
                             " --resume";
  CHECK(test::run_program(capped, "", tmp.path, output) == 1);
  CHECK_MESSAGE(output.find("File too large") != std::string::npos, output);
  CHECK(test::read_file(limited / "checkpoint.safetensors") == before);
}
