// The transformer driver end to end: the bare command (the synthetic task
// with recipe.synthetic_defaults: d 64, FFN 128, 4 heads, 2 + 2 layers, 400
// steps) learns the task; every offered norm and pre-norm train and log;
// --resume repeats the metrics bit for bit with dropout on; --translate
// reproduces the test translations from the run directory; bad flags are one
// clear error; and Multi30k trains when ../shared/data is there.
//
// Run times (drivers at --threads 1, on the 2-core development machine while
// it was shared, load average ~4; 57 s of CPU in all): the learning case 47 s
// (the 400-step run alone is ~35 s on an idle machine; then --translate of the
// 500 test sentences at beam 5, ~3 s), the four other norms and pre-norm at 40
// steps 27 s (~5 s each), resume 9.5 s, bad flags 0.7 s, the known-bug case
// 0.2 s, Multi30k 12 s (SentencePiece on 58,000 sentences is half of it):
// 96 s wall under that load, ~65 s idle.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bad_input_catalog.h"
#include "rmsgrad/experiments/common/text_file.h"
#include "rmsgrad/experiments/translation/synthetic_translation.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;
using nlohmann::json;
using test::metric_lines;
using test::TempDir;

namespace {

int run_driver(const std::string& args, const fs::path& dir, std::string& output) {
  return test::run_program(RG_TRANSFORMER_BIN, args, dir, output);
}

// The line's numbers and fields, without the wall-clock ones.
json without_clock(json line) {
  line.erase("time_sec");
  line.erase("sec_per_1k_steps");
  return line;
}

bool finite_number(const json& value) { return value.is_number() && std::isfinite(value.get<double>()); }

// A short run of the synthetic defaults trains, logs a finite training loss
// and validation lines, and ends with the test. --beam 1 keeps the final test
// (500 sentences from a barely trained model) quick.
void check_short_run(const std::string& flags) {
  CAPTURE(flags);
  TempDir tmp("transformer_short");
  std::string output;
  const fs::path run = tmp.path / "run";
  REQUIRE_MESSAGE(run_driver(flags + " --threads 1 --steps 40 --eval-every 40 --beam 1 --out " + run.string(),
                             tmp.path, output) == 0,
                  output);
  std::vector<json> train = metric_lines(run, "train"), valid = metric_lines(run, "valid"),
                    test_lines = metric_lines(run, "test");
  REQUIRE(train.size() == 1);  // --log-every 100: the last step only
  CHECK(train[0]["step"] == 40);
  CHECK_MESSAGE(finite_number(train[0]["loss"]), output);
  REQUIRE(valid.size() == 2);  // steps 0 and 40
  CHECK(valid.back()["step"] == 40);
  CHECK(finite_number(valid.back()["loss"]));
  CHECK(finite_number(valid.back()["bleu"]));
  REQUIRE(test_lines.size() == 1);
  CHECK(finite_number(test_lines[0]["bleu"]));
}

}  // namespace

TEST_CASE("transformer driver: the bare command learns the synthetic task, --translate agrees") {
  TempDir tmp("transformer_learn");
  std::string output;
  const fs::path run = tmp.path / "run";
  REQUIRE_MESSAGE(run_driver("--norm rmsnorm --threads 1 --out " + run.string(), tmp.path, output) == 0, output);
  // The synthetic defaults were applied (and saved, so that --translate rebuilds this model).
  const json config = json::parse(std::ifstream(run / "config.json"));
  CHECK(config["model-size"] == 64);
  CHECK(config["layers"] == 2);
  CHECK(config["steps"] == 400);
  CHECK(config["vocab-size"] == 400);
  CHECK(config["norm-position"] == "post");
  std::vector<json> train = metric_lines(run, "train"), valid = metric_lines(run, "valid"),
                    test_lines = metric_lines(run, "test");
  REQUIRE(train.size() == 4);
  REQUIRE(valid.size() == 3);  // steps 0, 200, 400
  REQUIRE(test_lines.size() == 1);
  CHECK(valid.front()["bleu"].get<double>() < 5.0);
  // Validation BLEU at step 400 was 80.4 for this seed (0) and 76.7 and 74.3
  // for seeds 1 and 2; at step 200 it is ~20, untrained ~0. A floor of 60 is
  // 14 points below the worst seed seen, so other BLAS builds or harmless
  // numerical changes pass, while a model that stopped learning (or learned
  // half as fast) fails.
  CHECK_MESSAGE(valid.back()["bleu"].get<double>() > 60.0, output);
  CHECK(valid.back()["loss"].get<double>() < 0.25 * valid.front()["loss"].get<double>());  // 6.4 → 0.28
  CHECK(test_lines[0]["bleu"].get<double>() > 60.0);                                       // 78.6
  CHECK(output.find("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0") != std::string::npos);
  for (const char* file : {"subword.model", "best.safetensors", "checkpoint.safetensors",
                           "hypotheses/valid.step400.txt", "hypotheses/test.txt"})
    CHECK_MESSAGE(fs::exists(run / file), file);
  CHECK(read_lines((run / "hypotheses/valid.step400.txt").string()).size() == 100);  // --valid-limit 100

  {  // --translate FILE --output: the test set's translations again
    // The driver's test set is the synthetic task drawn with seed + 102; the
    // same sentences through --translate (same beam 5) give the same translations.
    SyntheticTranslationOptions o;
    o.pairs = 500;
    o.seed = 0 + 102;
    o.max_words = 8;
    std::string text;
    for (const std::string& line : synthetic_translation(o).source) text += line + "\n";
    const std::string source = tmp.write("test.src", text);
    const fs::path translated = tmp.path / "translated.txt";
    REQUIRE_MESSAGE(run_driver("--translate " + source + " --threads 1 --out " + run.string() + " --output " +
                                   translated.string(),
                               tmp.path, output) == 0,
                    output);
    CHECK(output.find("translated 500 lines") != std::string::npos);
    CHECK(read_lines(translated.string()) == read_lines((run / "hypotheses/test.txt").string()));
  }
  {  // --translate FILE: one line on stdout per input line, an empty one too
    const std::string source = tmp.write("three.src", "Der hund schlaeft.\n\nDie katzen sehen ein haus.\n");
    const fs::path out = tmp.path / "stdout.txt", err = tmp.path / "stderr.txt";
    const std::string command = std::string(RG_TRANSFORMER_BIN) + " --translate " + source + " --beam 2 --threads 1 --out " +
                                run.string() + " > " + out.string() + " 2> " + err.string();
    REQUIRE(std::system(command.c_str()) == 0);
    const std::vector<std::string> lines = read_lines(out.string());
    CAPTURE(test::slurp(err));
    REQUIRE(lines.size() == 3);
    CHECK(!lines[0].empty());
    CHECK(!lines[2].empty());
  }
  {  // --translate with a run directory that has no config.json is one clear error
    const std::string source = tmp.write("one.src", "Der hund schlaeft.\n");
    CHECK(run_driver("--translate " + source + " --out " + (tmp.path / "no_run").string(), tmp.path, output) == 1);
    CHECK(output.find("error: --translate:") != std::string::npos);
    CHECK(output.find("has no config.json") != std::string::npos);
  }
}

TEST_CASE("transformer driver: every offered norm trains (40 steps), and pre-norm") {
  for (const char* norm : {"none", "layernorm", "prmsnorm", "l2norm"}) check_short_run(std::string("--norm ") + norm);
  check_short_run("--norm rmsnorm --norm-position pre");
}

TEST_CASE("transformer driver: --resume repeats the metrics bit for bit, dropout on") {
  TempDir tmp("transformer_resume");
  // Dropout stays at its default 0.1, so the result depends on the noise
  // generator's saved state as well as the weights, Adam and the batch cursor.
  // --stop-after 20 stops 4 steps past the step-16 checkpoint: the resumed
  // run drops those 4 logged steps and trains them again.
  const std::string common = "--norm rmsnorm --threads 1 --seed 3 --steps 24 --eval-every 8 --log-every 1 --beam 1 ";
  std::string output;
  const fs::path straight = tmp.path / "straight", resumed = tmp.path / "resumed";
  REQUIRE_MESSAGE(run_driver(common + "--out " + straight.string(), tmp.path, output) == 0, output);
  const json config = json::parse(std::ifstream(straight / "config.json"));
  CHECK(config["dropout"].get<double>() == doctest::Approx(0.1));
  REQUIRE_MESSAGE(run_driver(common + "--stop-after 20 --out " + resumed.string(), tmp.path, output) == 0, output);
  CHECK(metric_lines(resumed, "test").empty());
  REQUIRE_MESSAGE(run_driver(common + "--resume --out " + resumed.string(), tmp.path, output) == 0, output);
  CHECK(output.find("at step 16") != std::string::npos);
  for (const char* split : {"train", "valid", "test"}) {
    CAPTURE(split);
    std::vector<json> want = metric_lines(straight, split), got = metric_lines(resumed, split);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i)
      CHECK_MESSAGE(without_clock(got[i]) == without_clock(want[i]), "line " << i << ": " << got[i].dump()
                                                                             << " against " << want[i].dump());
  }
  CHECK(metric_lines(straight, "train").size() == 24);
  CHECK(metric_lines(straight, "valid").size() == 4);  // steps 0, 8, 16, 24
}

TEST_CASE("transformer driver: bad flags are one clear error and a non-zero exit") {
  TempDir tmp("transformer_errors");
  std::string output;
  const std::string out = " --threads 1 --out " + (tmp.path / "r").string();
  CHECK(run_driver("--no-such-flag" + out, tmp.path, output) == 2);
  CHECK(output.find("--no-such-flag") != std::string::npos);
  // BatchNorm and weight normalization are the CNN's choices; the Transformer offers neither.
  CHECK(run_driver("--norm batchnorm" + out, tmp.path, output) == 2);
  CHECK(output.find("batchnorm not in {none,layernorm,rmsnorm,prmsnorm,l2norm}") != std::string::npos);
  CHECK(run_driver("--norm weightnorm" + out, tmp.path, output) == 2);
  CHECK(output.find("weightnorm not in") != std::string::npos);
  CHECK(run_driver("--norm-position middle" + out, tmp.path, output) == 2);
  CHECK(output.find("--norm-position") != std::string::npos);
  // 3 heads do not divide the synthetic defaults' d = 64: found before any data is read.
  CHECK(run_driver("--heads 3" + out, tmp.path, output) == 1);
  CHECK(output.find("error: --heads 3 must divide --model-size 64") != std::string::npos);

  // The same, through the bad-input catalog's machinery: one "error:" line
  // and an earlier run's files in --out left as they were.
  const std::string bin = std::string(RG_TRANSFORMER_BIN) + " --threads 1";
  const std::vector<test::BadInput> catalog = {
      {"tf_unknown_flag", bin, "--out {out} --no-such-flag", {}, "--no-such-flag"},
      {"tf_norm_batchnorm", bin, "--out {out} --norm batchnorm", {}, "--norm"},
      {"tf_norm_weightnorm", bin, "--out {out} --norm weightnorm", {}, "--norm"},
      {"tf_norm_position_middle", bin, "--out {out} --norm-position middle", {}, "--norm-position"},
      {"tf_heads_3", bin, "--out {out} --heads 3", {}, "heads 3"},
      {"tf_translate_no_config", bin, "--out {in}/no_run --translate {in}/a.src", {{"a.src", "Der hund.\n"}},
       "has no config.json"},
  };
  for (const test::BadInput& entry : catalog) test::check_bad_input(entry, tmp.path / "catalog");
}

// The driver keeps a newly trained subword model in memory until training
// starts, so a start that fails (--heads 3 here; "no training pair is left
// after the length filter" with --max-length 1) leaves an earlier run's
// subword.model, and with it --translate of that run, as it was (run.h's
// promise that a failed start changes nothing in --out).
TEST_CASE("transformer driver: a failed start leaves an earlier run's subword model alone") {
  TempDir tmp("transformer_failed_start");
  const test::BadInput entry{"tf_heads_3_keeps_subwords",
                             std::string(RG_TRANSFORMER_BIN) + " --threads 1",
                             "--out {out} --heads 3",
                             {{"out/subword.model", "an earlier run's subword model"}},
                             "heads 3"};
  test::check_bad_input(entry, tmp.path);
}

TEST_CASE("transformer driver: Multi30k German→English (../shared/data) trains and is scored, when present") {
  const fs::path raw = fs::path(RG_SHARED_DATA_DIR) / "multi30k/task1/raw";
  if (!fs::exists(raw / "train.de.gz")) {
    MESSAGE("skipped: " << raw.string() << " is not there (Multi30k is read from ../shared/data only)");
    return;
  }
  TempDir tmp("transformer_multi30k");
  std::string output;
  const fs::path run = tmp.path / "run";
  auto file = [&](const char* name) { return (raw / name).string(); };
  // A tiny model (d 32, 1 + 1 layers), 30 steps of 1,000 tokens, 10 of them warm-up.
  REQUIRE_MESSAGE(
      run_driver("--train-src " + file("train.de.gz") + " --train-tgt " + file("train.en.gz") + " --valid-src " +
                     file("val.de.gz") + " --valid-tgt " + file("val.en.gz") + " --test-src " +
                     file("test_2016_flickr.de.gz") + " --test-tgt " + file("test_2016_flickr.en.gz") +
                     " --vocab-size 1000 --model-size 32 --ffn 64 --layers 1 --batch-tokens 1000 --warmup 10 "
                     "--lr 0.002 --steps 30 --eval-every 30 --valid-limit 30 --valid-beam 1 --beam 1 --threads 1 "
                     "--out " + run.string(),
                 tmp.path, output) == 0,
      output);
  CHECK(output.find("29000 training, 1014 validation, 1000 test pairs") != std::string::npos);
  std::vector<json> valid = metric_lines(run, "valid"), test_lines = metric_lines(run, "test");
  REQUIRE(valid.size() == 2);
  CHECK(valid.back()["loss"].get<double>() < valid.front()["loss"].get<double>());  // 7.49 → 6.16
  REQUIRE(test_lines.size() == 1);
  CHECK(finite_number(test_lines[0]["bleu"]));
  CHECK(output.find("test (best checkpoint") != std::string::npos);
  CHECK(read_lines((run / "hypotheses/test.txt").string()).size() == 1000);
}
