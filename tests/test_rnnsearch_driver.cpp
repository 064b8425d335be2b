// The rnnsearch driver end to end: it learns the synthetic task (validation
// BLEU from ~0 to above 80), keeps the best checkpoint and writes its
// hypotheses, --translate reproduces the test translations from the run
// directory, --resume repeats the losses bit for bit, bad input is one clear
// error, and Multi30k trains when ../shared/data is there.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

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
  return test::run_program(RG_RNNSEARCH_BIN, args, dir, output);
}

// A small model on short synthetic sentences: learns in a few hundred steps.
const std::string kSmall =
    "--embed 48 --hidden 48 --batch 32 --lr 0.003 --dropout 0 --synthetic-max-words 8 --synthetic-pairs 2000 "
    "--valid-limit 100 --valid-beam 1 --beam 2 --threads 1 ";

}  // namespace

TEST_CASE("rnnsearch driver: learns the synthetic task, keeps the best checkpoint, --translate agrees") {
  TempDir tmp("rnnsearch_learn");
  std::string output;
  const fs::path run = tmp.path / "run";
  REQUIRE_MESSAGE(run_driver(kSmall + "--seed 1 --steps 800 --eval-every 400 --log-every 100 --out " + run.string(),
                             tmp.path, output) == 0,
                  output);
  std::vector<json> train = metric_lines(run, "train"), valid = metric_lines(run, "valid"),
                    test_lines = metric_lines(run, "test");
  REQUIRE(train.size() == 8);
  REQUIRE(valid.size() == 3);
  REQUIRE(test_lines.size() == 1);
  CHECK(train.back()["sec_per_1k_steps"].is_number());
  CHECK(valid.front()["bleu"].get<double>() < 5.0);
  CHECK_MESSAGE(valid.back()["bleu"].get<double>() > 80.0, output);
  CHECK(valid.back()["loss"].get<double>() < 0.5 * valid.front()["loss"].get<double>());
  CHECK(test_lines[0]["bleu"].get<double>() > 80.0);
  CHECK(output.find("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0") != std::string::npos);
  for (const char* file : {"subword.model", "best.safetensors", "checkpoint.safetensors", "hypotheses/valid.step400.txt",
                           "hypotheses/test.txt"})
    CHECK_MESSAGE(fs::exists(run / file), file);
  CHECK(read_lines((run / "hypotheses/valid.step800.txt").string()).size() == 100);

  // The driver's test set is the synthetic task drawn with seed + 102; the
  // same sentences through --translate give the same translations.
  SyntheticTranslationOptions o;
  o.pairs = 500;
  o.seed = 1 + 102;
  o.max_words = 8;
  std::ofstream(tmp.path / "test.src") << [&] {
    std::string text;
    for (const std::string& line : synthetic_translation(o).source) text += line + "\n";
    return text;
  }();
  const fs::path translated = tmp.path / "translated.txt";
  REQUIRE_MESSAGE(run_driver("--translate " + (tmp.path / "test.src").string() + " --beam 2 --threads 1 --out " +
                                 run.string() + " --output " + translated.string(),
                             tmp.path, output) == 0,
                  output);
  CHECK(read_lines(translated.string()) == read_lines((run / "hypotheses/test.txt").string()));

  // --output never replaces the model it translates with, nor any file of the run.
  const std::string model_bytes = test::read_file(run / "best.safetensors");
  for (const fs::path& target : {run / "best.safetensors", run / "subword.model", tmp.path / "test.src"}) {
    CAPTURE(target);
    CHECK(run_driver("--translate " + (tmp.path / "test.src").string() + " --beam 1 --out " + run.string() +
                         " --output " + target.string(),
                     tmp.path, output) == 1);
    CHECK_MESSAGE(output.find("error: --output " + target.string()) != std::string::npos, output);
  }
  CHECK(test::read_file(run / "best.safetensors") == model_bytes);
  // Nor a file of another run; a device is written to, not replaced.
  const fs::path other = tmp.path / "other";
  fs::create_directories(other);
  std::ofstream(other / "config.json") << "{}\n";
  std::ofstream(other / "metrics.jsonl") << "{}\n";
  CHECK(run_driver("--translate " + (tmp.path / "test.src").string() + " --beam 1 --out " + run.string() +
                       " --output " + (other / "metrics.jsonl").string(),
                   tmp.path, output) == 1);
  CHECK_MESSAGE(output.find("is a file inside the run folder") != std::string::npos, output);
  CHECK(run_driver("--translate " + (tmp.path / "test.src").string() + " --beam 1 --out " + run.string() +
                       " --output /dev/null",
                   tmp.path, output) == 0);
  CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("rnnsearch driver: --resume repeats the losses bit for bit") {
  TempDir tmp("rnnsearch_resume");
  const std::string common = kSmall + "--seed 3 --steps 40 --eval-every 15 --log-every 1 ";
  std::string output;
  const fs::path straight = tmp.path / "straight", resumed = tmp.path / "resumed";
  REQUIRE_MESSAGE(run_driver(common + "--out " + straight.string(), tmp.path, output) == 0, output);
  std::vector<json> train = metric_lines(straight, "train");
  REQUIRE(train.size() == 40);
  REQUIRE_MESSAGE(run_driver(common + "--stop-after 20 --out " + resumed.string(), tmp.path, output) == 0, output);
  REQUIRE_MESSAGE(run_driver(common + "--resume --out " + resumed.string(), tmp.path, output) == 0, output);
  std::vector<json> again = metric_lines(resumed, "train");
  REQUIRE(again.size() == train.size());
  for (size_t i = 0; i < train.size(); ++i)
    CHECK_MESSAGE(again[i]["loss"].get<double>() == train[i]["loss"].get<double>(), "step " << i + 1);
  CHECK(metric_lines(resumed, "test")[0]["bleu"] == metric_lines(straight, "test")[0]["bleu"]);
}

TEST_CASE("rnnsearch driver: --init-center is recorded and kept on resume; summed_inputs reads the run") {
  TempDir tmp("rnnsearch_init_center");
  const fs::path run = tmp.path / "run";
  const std::string common = kSmall + "--seed 2 --steps 4 --eval-every 2 --log-every 1 --out " + run.string() + " ";
  std::string output;
  REQUIRE_MESSAGE(run_driver(common + "--init-center 0.2 --stop-after 2", tmp.path, output) == 0, output);
  CHECK(json::parse(test::read_file(run / "config.json"))["init-center"].get<double>() == doctest::Approx(0.2));
  CHECK(run_driver(common + "--init-center 0 --resume", tmp.path, output) != 0);
  CHECK_MESSAGE(output.find("init-center") != std::string::npos, output);
  REQUIRE_MESSAGE(run_driver(common + "--init-center 0.2 --resume", tmp.path, output) == 0, output);
  CHECK(metric_lines(run, "train").size() == 4);

  // Table 5's statistics of the trained run, on 50 of its validation pairs.
  const fs::path table = tmp.path / "summed_inputs.json";
  REQUIRE_MESSAGE(test::run_program(RG_SUMMED_INPUTS_BIN,
                                    run.string() + " --limit 50 --threads 1 --json " + table.string(), tmp.path,
                                    output) == 0,
                  output);
  CHECK_MESSAGE(output.find("raw M") != std::string::npos, output);
  const json stats = json::parse(test::read_file(table));
  CHECK(stats["sentences"] == 50);
  CHECK(stats["norm"] == "rmsnorm");
  for (const char* kind : {"raw", "normalized"})
    for (const char* position : {"1", "2", "3", "4", "all"}) {
      CAPTURE(kind);
      CAPTURE(position);
      REQUIRE(stats[kind][position]["mean"].is_number());
      CHECK(std::isfinite(stats[kind][position]["mean"].get<double>()));
      CHECK(stats[kind][position]["sd"].get<double>() > 0.0);
    }
  CHECK(stats["raw"]["all"]["values"].get<double>() > stats["raw"]["1"]["values"].get<double>());
  CHECK(test::run_program(RG_SUMMED_INPUTS_BIN, (tmp.path / "nowhere").string(), tmp.path, output) != 0);
  CHECK_MESSAGE(output.find("config.json") != std::string::npos, output);
}

TEST_CASE("rnnsearch driver: hypotheses are never written through a link in the run folder") {
  TempDir tmp("rnnsearch_link");
  const fs::path run = tmp.path / "run", elsewhere = tmp.path / "elsewhere";
  fs::create_directories(run);
  fs::create_directories(elsewhere);
  fs::create_directory_symlink(elsewhere, run / "hypotheses");
  std::string output;
  CHECK(run_driver(kSmall + "--steps 2 --eval-every 2 --out " + run.string(), tmp.path, output) == 1);
  CHECK_MESSAGE(output.find("hypotheses' is a symbolic link") != std::string::npos, output);
  CHECK(fs::is_empty(elsewhere));
}

TEST_CASE("rnnsearch driver: bad input is one clear error and a non-zero exit") {
  TempDir tmp("rnnsearch_errors");
  std::string output;
  const std::string out = " --out " + (tmp.path / "r").string();
  CHECK(run_driver("--no-such-flag" + out, tmp.path, output) == 2);
  CHECK(run_driver("--norm batchnorm" + out, tmp.path, output) == 2);
  const std::string de = tmp.write("a.de", "Ein Hund läuft.\nZwei Katzen.\n");
  const std::string en = tmp.write("a.en", "A dog runs.\nTwo cats.\n");
  CHECK(run_driver("--train-src " + de + " --train-tgt " + en + out, tmp.path, output) == 2);  // no validation set
  CHECK(output.find("--valid-src") != std::string::npos);

  const std::string data = " --valid-src " + de + " --valid-tgt " + en + " --vocab-size 16" + out;
  CHECK(run_driver("--train-src " + tmp.file("missing.de") + " --train-tgt " + en + data, tmp.path, output) == 1);
  CHECK(output.find("missing.de") != std::string::npos);
  const std::string short_en = tmp.write("short.en", "A dog runs.\n");
  CHECK(run_driver("--train-src " + de + " --train-tgt " + short_en + data, tmp.path, output) == 1);
  CHECK(output.find("short.en has 1") != std::string::npos);
  const std::string latin1 = tmp.write("latin1.de", "Ein Hund\nZwei Katzen schl\xe4" "fen.\n");
  CHECK(run_driver("--train-src " + latin1 + " --train-tgt " + en + data, tmp.path, output) == 1);
  CHECK(output.find("latin1.de:2") != std::string::npos);
  CHECK(output.find("error:") != std::string::npos);

  CHECK(run_driver("--translate " + de + " --out " + (tmp.path / "no_run").string(), tmp.path, output) == 1);
  CHECK(output.find("config.json") != std::string::npos);
}

TEST_CASE("Multi30k German→English (../shared/data) trains and is scored, when present") {
  const fs::path raw = fs::path(RG_SHARED_DATA_DIR) / "multi30k/task1/raw";
  if (!fs::exists(raw / "train.de.gz")) {
    MESSAGE("skipped: " << raw.string() << " is not there (Multi30k is read from ../shared/data only)");
    return;
  }
  TempDir tmp("rnnsearch_multi30k");
  std::string output;
  const fs::path run = tmp.path / "run";
  auto file = [&](const char* name) { return (raw / name).string(); };
  REQUIRE_MESSAGE(
      run_driver("--train-src " + file("train.de.gz") + " --train-tgt " + file("train.en.gz") + " --valid-src " +
                     file("val.de.gz") + " --valid-tgt " + file("val.en.gz") + " --test-src " +
                     file("test_2016_flickr.de.gz") + " --test-tgt " + file("test_2016_flickr.en.gz") +
                     " --vocab-size 1000 --embed 32 --hidden 32 --batch 32 --lr 0.003 --steps 30 --eval-every 30 "
                     "--valid-limit 30 --valid-beam 1 --beam 1 --threads 2 --out " + run.string(),
                 tmp.path, output) == 0,
      output);
  CHECK(output.find("29000 training, 1014 validation, 1000 test pairs") != std::string::npos);
  std::vector<json> valid = metric_lines(run, "valid"), test_lines = metric_lines(run, "test");
  REQUIRE(valid.size() == 2);
  CHECK(valid.back()["loss"].get<double>() < valid.front()["loss"].get<double>());
  REQUIRE(test_lines.size() == 1);
  CHECK(test_lines[0]["bleu"].is_number());
  CHECK(read_lines((run / "hypotheses/test.txt").string()).size() == 1000);
}
