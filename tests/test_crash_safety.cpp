// What a failed start and a damaged checkpoint may not do, at the
// level of the pieces; tests/test_bad_inputs.cpp checks the same through the
// drivers, tests/kill_resume.sh and tests/full_disk.sh with real kills and a
// real full disk.
//   - Run writes nothing into --out before begin_training: a start that
//     fails on its data or checkpoint leaves the earlier run's files alone.
//   - The training metadata of a checkpoint is read whole or refused with a
//     message naming the file and the key (no bare std::stod exceptions, no
//     "12abc" read as 12).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/training_progress.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Parses --out (and --resume) into a Run's options, as a driver does.
struct Flags {
  RunOptions run;
  CLI::App app{"crash safety"};
  explicit Flags(const std::vector<std::string>& args) {
    add_run_options(app, run);
    std::vector<const char*> argv = {"driver"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    REQUIRE(!parse_flags(app, static_cast<int>(argv.size()), argv.data(), out, err).has_value());
  }
};

Metadata with_progress(const std::map<std::string, std::string>& changes) {
  Metadata m = progress_metadata({.step = 12, .train_seconds = 3.5});
  for (const auto& [key, value] : changes) m[key] = value;
  return m;
}

const std::string kSource = "run/checkpoint.safetensors";

}  // namespace

TEST_CASE("run: a start that fails before training leaves the earlier run's files byte for byte") {
  test::TempDir tmp("crash_safety_run");
  const fs::path out = tmp.path / "run";
  fs::create_directories(out);
  const std::map<std::string, std::string> earlier = {
      {"config.json", "{\"lr\": 0.1}\n"}, {"train.log", "an earlier log\n"}, {"metrics.jsonl", "{\"step\":0}\n"}};
  for (const auto& [name, text] : earlier) std::ofstream(out / name) << text;
  for (const bool resume : {false, true}) {
    CAPTURE(resume);
    std::vector<std::string> args = {"--out", out.string()};
    if (resume) args.push_back("--resume");
    Flags flags(args);
    std::streambuf* old = std::cout.rdbuf(nullptr);  // the header goes to stdout
    CHECK_THROWS_AS(
        {
          Run run(flags.run, run_settings(flags.app));
          run.note("loading the data");
          throw Error("the data is bad");  // as a reader would, before begin_training
        },
        Error);
    std::cout.rdbuf(old);
    for (const auto& [name, text] : earlier) CHECK(read_text(out / name) == text);
  }
}

TEST_CASE("run: training writes the header lines kept since the start, then the metrics") {
  test::TempDir tmp("crash_safety_begin");
  Flags flags({"--out", (tmp.path / "run").string()});
  std::streambuf* old = std::cout.rdbuf(nullptr);
  {
    Run run(flags.run, run_settings(flags.app));
    run.note("before training");
    CHECK(!fs::exists(tmp.path / "run" / "train.log"));
    run.begin_training(0);
    run.log_train(1, 0.5);
  }
  std::cout.rdbuf(old);
  const std::string log = read_text(tmp.path / "run" / "train.log");
  CHECK(log.find("--out") != std::string::npos);
  CHECK(log.find("before training") < log.find("step        1"));
  CHECK(read_text(tmp.path / "run" / "metrics.jsonl").find("\"step\":1") != std::string::npos);
  CHECK(fs::exists(tmp.path / "run" / "config.json"));
}

TEST_CASE("training progress: read back exactly; every malformed value is an error naming file and key") {
  const TrainingProgress back = read_training_progress(with_progress({}), kSource);
  CHECK(back.step == 12);
  CHECK(back.train_seconds == 3.5);
  CHECK(!back.cursor.has_value());

  const std::vector<std::tuple<std::string, std::string, std::string>> bad = {
      {"step", "12abc", "'step' = '12abc' is not a whole number"},
      {"step", "", "'step' = '' is not a whole number"},
      {"step", "-3", "'step' = -3 is negative"},
      {"epoch", "99999999999999999999", "is not a whole number"},
      {"best_metric", "nan", "'best_metric' = 'nan' is not a finite number"},
      {"train_seconds", "1e999", "is not a finite number"},
      {"train_seconds", "3.5s", "is not a finite number"},
      {"data_cursor", "[]", "metadata 'data_cursor': data cursor state"},
  };
  for (const auto& [key, value, message] : bad) {
    CAPTURE(key);
    CAPTURE(value);
    test::check_error([&] { read_training_progress(with_progress({{key, value}}), kSource); }, kSource, message);
  }
  Metadata without_step = with_progress({});
  without_step.erase("step");
  test::check_error([&] { read_training_progress(without_step, kSource); }, kSource, "no 'step' in its metadata");

  // A generator's position is two decimal numbers, read whole.
  Generator gen(1);
  for (const char* text : {"7", "7 x", "-1 0", "0x10 0", "7  0", "7 0 1"}) {
    CAPTURE(text);
    test::check_error([&] { restore_generator(gen, text); }, "restore_generator", "is not a generator state");
  }
  restore_generator(gen, "7 12");
  CHECK(gen.seed() == 7);
  CHECK(gen.offset() == 12);
}
