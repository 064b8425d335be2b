// --overwrite (train/replaced_run.h): only a run's files move, a config.json
// no run wrote is left alone, a live run below --out and an input inside it
// are refused, and the move is all or nothing: a failed one is rolled back,
// a killed one is undone by the next start.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bad_input_catalog.h"
#include "driver_flags.h"
#include "rmsgrad/train/replaced_run.h"
#include "rmsgrad/train/run.h"
#include "test_util.h"

using namespace rg;
using test::DriverFlags;
namespace fs = std::filesystem;

namespace {

// The Run echoes its log to stdout; the tests' output stays readable without it.
struct QuietStdout {
  std::streambuf* old = std::cout.rdbuf(nullptr);
  ~QuietStdout() { std::cout.rdbuf(old); }
};

void write(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }

// A run of the test driver that trained one step in `dir`: config.json, train.log, metrics.jsonl.
void earlier_run(const fs::path& dir) {
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string()}) == -1);
  Run run(flags.run, run_settings(flags.app));
  run.begin_training(0);
  run.log_train(1, 0.5);
}

// The message of the error that starting a run with these flags raises ("(no error)" when it starts).
std::string start_error(DriverFlags& flags) {
  return test::error_of([&] { Run run(flags.run, run_settings(flags.app)); });
}

std::vector<fs::path> replaced_folders(const fs::path& dir) {
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind("replaced-", 0) == 0) folders.push_back(entry.path());
  return folders;
}

// What a process killed in the middle of moving `names` aside leaves: the
// folder, its journal, and the first `moved` names in it.
void interrupt_move(const fs::path& dir, const std::vector<std::string>& names, size_t moved) {
  const fs::path aside = dir / "replaced-20240101-000000";
  fs::create_directory(aside);
  std::string journal;
  for (const std::string& name : names) journal += name + "\n";
  write(aside / ".moving", journal);
  for (size_t i = 0; i < moved; ++i) fs::rename(dir / names[i], aside / names[i]);
}

}  // namespace

TEST_CASE("replaced run: --overwrite moves only the run's files; notes, sources, folders and .git stay") {
  QuietStdout quiet;
  test::TempDir tmp("replaced_only_run");
  const fs::path dir = tmp.path / "project";
  earlier_run(dir);
  const std::string earlier_log = test::read_file(dir / "train.log");
  fs::create_directories(dir / ".git");
  write(dir / ".git" / "HEAD", "ref: refs/heads/main\n");
  fs::create_directories(dir / "src");
  write(dir / "src" / "main.cpp", "int main() {}\n");
  write(dir / "notes.txt", "my notes\n");
  write(dir / "sample.txt", "an earlier sample\n");           // a file the program declares as its own
  write(dir / ".checkpoint.safetensors.tmp", "torn");          // a killed atomic write's temporary
  DriverFlags flags;
  flags.run.files = {"sample.txt"};
  REQUIRE(flags.parse({"--out", dir.string(), "--overwrite"}) == -1);
  {
    Run run(flags.run, run_settings(flags.app));
    run.begin_training(0);
  }
  const std::vector<fs::path> aside = replaced_folders(dir);
  REQUIRE(aside.size() == 1);
  const std::vector<std::string> moved = {"config.json", "metrics.jsonl", "train.log", "sample.txt",
                                          ".checkpoint.safetensors.tmp"};
  for (const std::string& name : moved) CHECK_MESSAGE(fs::exists(aside[0] / name), name);
  CHECK(std::distance(fs::directory_iterator(aside[0]), fs::directory_iterator()) == 5);  // no journal, nothing else
  CHECK(test::read_file(aside[0] / "train.log") == earlier_log);
  CHECK(!fs::exists(dir / "sample.txt"));
  CHECK(test::read_file(dir / "notes.txt") == "my notes\n");
  CHECK(test::read_file(dir / "src" / "main.cpp") == "int main() {}\n");
  CHECK(test::read_file(dir / ".git" / "HEAD") == "ref: refs/heads/main\n");
  CHECK(test::read_file(dir / "train.log")
            .find("moved the earlier run's config.json, metrics.jsonl, train.log, sample.txt, "
                  ".checkpoint.safetensors.tmp into") != std::string::npos);
}

TEST_CASE("replaced run: a config.json no run wrote is never written over or moved; one a run wrote is a run") {
  QuietStdout quiet;
  test::TempDir tmp("replaced_config");
  const fs::path dir = tmp.path / "project";
  fs::create_directories(dir);
  const std::string theirs = "{\"name\": \"my project\", \"seed\": 1}\n";  // one of the run's 11 settings
  write(dir / "config.json", theirs);
  for (const bool overwrite : {false, true}) {
    CAPTURE(overwrite);
    DriverFlags flags;
    std::vector<std::string> args = {"--out", dir.string()};
    if (overwrite) args.push_back("--overwrite");
    REQUIRE(flags.parse(args) == -1);
    CHECK(start_error(flags).find("holds a config.json that is not a run's") != std::string::npos);
  }
  CHECK(test::read_file(dir / "config.json") == theirs);
  CHECK(replaced_folders(dir).empty());

  // A run killed right after writing its config.json leaves that alone: still a run.
  fs::remove(dir / "config.json");
  earlier_run(dir);
  fs::remove(dir / "train.log");
  fs::remove(dir / "metrics.jsonl");
  DriverFlags plain;
  REQUIRE(plain.parse({"--out", dir.string()}) == -1);
  CHECK(start_error(plain).find("holds a run (config.json)") != std::string::npos);
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--overwrite"}) == -1);
  {
    Run run(flags.run, run_settings(flags.app));
    run.begin_training(0);
  }
  REQUIRE(replaced_folders(dir).size() == 1);
  CHECK(fs::exists(replaced_folders(dir)[0] / "config.json"));
}

TEST_CASE("replaced run: --overwrite refuses a folder with a live run below it, at the start and at the move") {
  QuietStdout quiet;
  test::TempDir tmp("replaced_live");
  const fs::path dir = tmp.path / "runs";
  earlier_run(dir);
  // A lock whose run has ended, and a FIFO named .lock, are no live run.
  fs::create_directories(dir / "ended");
  write(dir / "ended" / ".lock", "123\n");
  fs::create_directories(dir / "odd");
  REQUIRE(::mkfifo((dir / "odd" / ".lock").c_str(), 0644) == 0);
  const auto before = test::snapshot(dir);
  {
    Run live({.out = (dir / "a").string()});  // holds runs/a/.lock while it lives
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string(), "--overwrite"}) == -1);
    CHECK(start_error(flags).find(fmt::format("a run (pid {}) is training in '{}'", ::getpid(),
                                              (dir / "a").string())) != std::string::npos);
  }
  const auto after = test::snapshot(dir);  // runs/a/ has the live run's files now; nothing else changed
  for (const auto& [name, bytes] : before) CHECK_MESSAGE((after.count(name) == 1 && after.at(name) == bytes), name);
  CHECK(replaced_folders(dir).empty());

  // A run that starts after the constructor looked is caught before anything moves.
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--overwrite"}) == -1);
  Run run(flags.run, run_settings(flags.app));
  Run late({.out = (dir / "b").string()});
  CHECK(test::error_of([&] { run.begin_training(0); }).find("is training in '" + (dir / "b").string()) !=
        std::string::npos);
  CHECK(replaced_folders(dir).empty());
  CHECK(test::read_file(dir / "train.log") == before.at("train.log"));
}

TEST_CASE("replaced run: with --overwrite an input inside --out is refused; an input that is a run file, always") {
  QuietStdout quiet;
  test::TempDir tmp("replaced_inputs");
  const fs::path dir = tmp.path / "run";
  earlier_run(dir);
  fs::create_directories(dir / "data");
  write(dir / "data" / "train.txt", "the data\n");
  fs::create_directory_symlink(dir, tmp.path / "link");
  const auto before = test::snapshot(dir);
  for (const fs::path& data : {dir / "data" / "train.txt", tmp.path / "link" / "data" / "train.txt", dir}) {
    CAPTURE(data);
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string(), "--overwrite"}) == -1);
    flags.run.inputs = {{"--data", data.string()}};
    CHECK(start_error(flags).find("--data '" + data.string() + "' is inside --out") != std::string::npos);
  }
  CHECK(test::snapshot(dir) == before);
  CHECK(replaced_folders(dir).empty());

  // Without --overwrite nothing of the folder moves: data beside a run is read where it is...
  DriverFlags resume;
  REQUIRE(resume.parse({"--out", dir.string(), "--resume"}) == -1);
  resume.run.inputs = {{"--data", (dir / "data" / "train.txt").string()}};
  CHECK(start_error(resume) == "(no error)");
  // ...but never from a file the run writes.
  DriverFlags own;
  REQUIRE(own.parse({"--out", dir.string(), "--resume"}) == -1);
  own.run.inputs = {{"--data", (dir / "train.log").string()}};
  CHECK(start_error(own).find("--data '" + (dir / "train.log").string() + "' is the run file 'train.log'") !=
        std::string::npos);
}

TEST_CASE("replaced run: an --overwrite killed mid-move is undone by the next start, whatever its flags") {
  QuietStdout quiet;
  test::TempDir tmp("replaced_interrupted");
  const fs::path dir = tmp.path / "run";
  earlier_run(dir);
  write(dir / "notes.txt", "my notes\n");
  const std::vector<std::string> names = {"config.json", "metrics.jsonl", "train.log"};
  const auto whole = test::snapshot(dir);

  // A plain fresh start finds the run whole again, and refuses it as a run.
  interrupt_move(dir, names, 1);
  DriverFlags plain;
  REQUIRE(plain.parse({"--out", dir.string()}) == -1);
  CHECK(start_error(plain).find("holds a run (config.json, metrics.jsonl, train.log)") != std::string::npos);
  CHECK(test::snapshot(dir) == whole);
  CHECK(replaced_folders(dir).empty());

  // --resume continues it, and says what was put back.
  interrupt_move(dir, names, 2);
  DriverFlags resume;
  REQUIRE(resume.parse({"--out", dir.string(), "--resume"}) == -1);
  {
    Run run(resume.run, run_settings(resume.app));
    run.begin_training(1);
  }
  const std::string log = test::read_file(dir / "train.log");
  CHECK(log.rfind(whole.at("train.log"), 0) == 0);  // appended to
  CHECK(log.find("an --overwrite was killed while moving the earlier run aside; put back config.json, "
                 "metrics.jsonl") != std::string::npos);

  // --overwrite puts it back, then moves it aside whole, into one new folder.
  interrupt_move(dir, names, 3);
  DriverFlags overwrite;
  REQUIRE(overwrite.parse({"--out", dir.string(), "--overwrite"}) == -1);
  {
    Run run(overwrite.run, run_settings(overwrite.app));
    run.begin_training(0);
  }
  const std::vector<fs::path> aside = replaced_folders(dir);
  REQUIRE(aside.size() == 1);
  CHECK(aside[0].filename() != "replaced-20240101-000000");
  for (const std::string& name : names) CHECK_MESSAGE(fs::exists(aside[0] / name), name);
  CHECK(!fs::exists(aside[0] / ".moving"));
  CHECK(test::read_file(dir / "notes.txt") == "my notes\n");

  // A journal that names anything but a file of the run directory is refused, not followed.
  fs::create_directory(dir / "replaced-20240101-000001");
  write(dir / "replaced-20240101-000001" / ".moving", "../elsewhere\n");
  CHECK(start_error(resume).find("names '../elsewhere', which is not a file of the run directory") !=
        std::string::npos);
}

TEST_CASE("replaced run: a move that fails part way is rolled back; nothing is split") {
  test::TempDir tmp("replaced_rollback");
  const fs::path dir = tmp.path / "run";
  fs::create_directories(dir);
  write(dir / "config.json", "{}\n");
  write(dir / "train.log", "log\n");
  write(dir / "metrics.jsonl", "{\"step\": 0}\n");
  const auto before = test::snapshot(dir);
  // checkpoint.safetensors went away after the run looked: its rename fails after two have moved.
  const std::string message = test::error_of(
      [&] { move_run_aside(dir, {"config.json", "train.log", "checkpoint.safetensors", "metrics.jsonl"}); });
  CHECK(message.find("cannot move '" + (dir / "checkpoint.safetensors").string()) != std::string::npos);
  CHECK(message.find("nothing was moved") != std::string::npos);
  CHECK(test::snapshot(dir) == before);
  CHECK(replaced_folders(dir).empty());

  // The same names, all there, move whole; the journal is gone.
  const fs::path aside = move_run_aside(dir, {"config.json", "train.log", "metrics.jsonl"});
  CHECK(test::snapshot(aside) == before);
  CHECK(replaced_folders(dir) == std::vector<fs::path>{aside});
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
}
