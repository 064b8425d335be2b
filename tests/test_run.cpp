// The run directory (train/run.h): config.json, metrics.jsonl and train.log,
// resume and its recorded changes, --overwrite (the rest of it in
// test_replaced_run.cpp), links never written through, clear errors for an
// unusable --out, paths of any bytes, a bad OMP_NUM_THREADS; and the progress
// bar.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "driver_flags.h"
#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/train/progress.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/escape_bytes.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/train/run.h"

using namespace rg;
using test::DriverFlags;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// One directory under /tmp for this test run, removed at exit.
struct TempRoot {
  fs::path path;
  TempRoot() {
    path = fs::temp_directory_path() /
           ("rg_scaffold_" + std::to_string(::getpid()) + "_" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::path temp_dir(const std::string& name) {
  static TempRoot root;
  fs::path dir = root.path / name;
  fs::remove_all(dir);
  return dir;
}

std::vector<json> read_jsonl(const fs::path& file) {
  std::vector<json> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));  // throws if invalid
  return lines;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `body` with stdout captured (the Run echoes its log there).
template <class Body>
std::string capturing_stdout(Body&& body) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  try {
    body();
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  return captured.str();
}

}  // namespace

TEST_CASE("run: creates --out, saves every flag to config.json, prints the header") {
  fs::path dir = temp_dir("run_config") / "nested" / "run";
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--seed", "3", "--lr", "0.125", "--hidden", "5", "6"}) == -1);
  std::string printed = capturing_stdout([&] { Run run(flags.run, run_settings(flags.app)); });
  REQUIRE(fs::is_directory(dir));
  json config = json::parse(read_text(dir / "config.json"));
  for (const char* name : {"config", "seed", "threads", "out", "resume", "resume-with-changes", "overwrite",
                           "log-every", "collective-deadline", "lr", "norm", "hidden"}) {
    CAPTURE(name);
    CHECK(config.contains(name));
    CHECK(printed.find(std::string("--") + name) != std::string::npos);
  }
  CHECK(config.size() == 14);  // and the product library (RG_GEMM) and the program; nothing else (no --help)
  CHECK(config["seed"] == 3);
  CHECK(config["seed"].is_number_unsigned());
  CHECK(config["lr"] == 0.125);
  CHECK(config["norm"] == "rms");
  CHECK(config["resume"] == false);
  CHECK(config["log-every"] == 100);
  CHECK(config["out"] == dir.string());
  CHECK(config["config"].is_null());
  CHECK(config["hidden"] == json::array({5, 6}));
  CHECK(read_text(dir / "train.log").find("--lr") != std::string::npos);
}

TEST_CASE("run: metrics.jsonl lines are JSON with the required keys") {
  fs::path dir = temp_dir("run_metrics");
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string()}) == -1);
  std::string printed = capturing_stdout([&] {
    Run run(flags.run, run_settings(flags.app));
    CHECK_THROWS_WITH_AS(run.log_train(1, 1.0), doctest::Contains("begin_training"), Error);
    run.begin_training(0);
    run.log_eval("valid", 0, 2.5, {{"error_pct", 90.0}});
    run.log_train(10, 2.0, {{"lr", 0.1}});
    {
      auto paused = run.pause_clock();
      run.log_eval("test", 10, 1.75, {{"bleu", 12.5}, {"r1", 30.0}});
    }
    run.note("saved checkpoint");
    CHECK_THROWS_WITH_AS(run.log_eval("dev", 10, 1.0), doctest::Contains("\"valid\" or \"test\""), Error);
    CHECK_THROWS_WITH_AS(run.log_train(11, 1.0, {{"loss", 1.0}}), doctest::Contains("standard field"), Error);
  });
  std::vector<json> lines = read_jsonl(dir / "metrics.jsonl");
  REQUIRE(lines.size() == 3);
  for (const json& line : lines) {
    CHECK(line.contains("step"));
    CHECK(line.contains("split"));
    CHECK(line.contains("loss"));
    CHECK(line["time_sec"].is_number());
  }
  CHECK(lines[0]["split"] == "valid");
  CHECK(lines[0]["error_pct"] == 90.0);
  CHECK(lines[1]["split"] == "train");
  CHECK(lines[1]["sec_per_1k_steps"].is_number());
  CHECK(lines[1]["sec_per_1k_steps"].get<double>() >= 0.0);
  CHECK(lines[1]["lr"] == 0.1);
  CHECK(lines[2]["bleu"] == 12.5);
  CHECK(lines[2]["r1"] == 30.0);
  std::string log = read_text(dir / "train.log");
  CHECK(log.find("saved checkpoint") != std::string::npos);
  CHECK(log.find("step       10  train  loss   2.000000") != std::string::npos);
  CHECK(printed.find("step       10  test   loss   1.750000") != std::string::npos);
}

TEST_CASE("run: --resume keeps metrics up to the checkpoint's step and appends") {
  fs::path dir = temp_dir("run_resume");
  {
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string(), "--lr", "0.1"}) == -1);
    capturing_stdout([&] {
      Run run(flags.run, run_settings(flags.app));
      run.begin_training(0);
      for (int step = 10; step <= 40; step += 10) run.log_train(step, 1.0 / step);
      run.log_eval("valid", 20, 0.5);
    });
    std::ofstream(dir / "metrics.jsonl", std::ios::app) << "{\"step\": 50, \"spl";  // torn by a crash
  }
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--resume", "--resume-with-changes", "--lr", "0.05"}) == -1);
  std::string printed = capturing_stdout([&] {
    Run run(flags.run, run_settings(flags.app));
    run.begin_training(20);  // the checkpoint was at step 20
    run.log_train(30, 0.03);
  });
  std::vector<json> lines = read_jsonl(dir / "metrics.jsonl");
  std::vector<int64_t> steps;
  for (const json& line : lines) steps.push_back(line["step"].get<int64_t>());
  CHECK(steps == std::vector<int64_t>{10, 20, 20, 30});
  CHECK(lines.back()["loss"] == 0.03);
  CHECK(lines.back()["time_sec"].get<double>() >= lines[1]["time_sec"].get<double>());
  CHECK(printed.find("dropped 2 after the checkpoint and 1 torn") != std::string::npos);
  CHECK(printed.find("--lr changed on resume: 0.1 -> 0.05") != std::string::npos);
  std::string log = read_text(dir / "train.log");
  CHECK(log.find("(fresh)") != std::string::npos);  // the first run's header is kept
  CHECK(log.find("(resuming)") != std::string::npos);
}

TEST_CASE("run: a damaged line before the last refuses the resume and changes no file") {
  fs::path dir = temp_dir("run_resume_damaged");
  {
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string()}) == -1);
    capturing_stdout([&] {
      Run run(flags.run, run_settings(flags.app));
      run.begin_training(0);
      for (int step = 10; step <= 40; step += 10) run.log_train(step, 1.0 / step);
    });
  }
  std::string text = read_text(dir / "metrics.jsonl");
  text.replace(text.find('\n') + 1, 0, "garbage\n");  // line 2
  std::ofstream(dir / "metrics.jsonl", std::ios::trunc) << text;
  const std::string config = read_text(dir / "config.json"), log = read_text(dir / "train.log");
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--resume"}) == -1);
  // The error leaves the Run's scope, as in a driver (a Run ended without one saves its files).
  CHECK_THROWS_WITH_AS(capturing_stdout([&] {
                         Run run(flags.run, run_settings(flags.app));
                         run.begin_training(20);
                       }),
                       doctest::Contains("metrics.jsonl line 2 is not a metrics line; the run's record is damaged"),
                       Error);
  CHECK(read_text(dir / "metrics.jsonl") == text);
  CHECK(read_text(dir / "config.json") == config);
  CHECK(read_text(dir / "train.log") == log);
}

TEST_CASE("run: at the checkpoint's step a resume keeps only the lines logged before the checkpoint was saved") {
  fs::path dir = temp_dir("run_resume_final_test");
  int64_t at_checkpoint = 0;
  {
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string()}) == -1);
    capturing_stdout([&] {
      Run run(flags.run, run_settings(flags.app));
      run.begin_training(0);
      run.log_train(10, 1.0);
      run.log_eval("valid", 10, 0.5);
      run.log_eval("test", 10, 0.6);  // logged with the validation
      at_checkpoint = run.metrics_lines();  // the checkpoint is saved here
      run.log_eval("test", 10, 0.6);  // the final test
    });
  }
  CHECK(at_checkpoint == 3);
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--resume"}) == -1);
  std::string printed = capturing_stdout([&] {
    Run run(flags.run, run_settings(flags.app));
    run.begin_training(10, at_checkpoint);
    run.log_eval("test", 10, 0.6);  // tested again
  });
  std::vector<json> lines = read_jsonl(dir / "metrics.jsonl");
  REQUIRE(lines.size() == 4);
  CHECK(lines[2]["split"] == "test");
  CHECK(lines[3]["split"] == "test");
  CHECK(printed.find("kept 3 metrics lines, dropped 1 after the checkpoint") != std::string::npos);
}

TEST_CASE("run: a refused setting that reads the same either way is shown as JSON") {
  fs::path dir = temp_dir("run_resume_same_display");
  {
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string(), "--lr", "0.1"}) == -1);
    capturing_stdout([&] { Run run(flags.run, run_settings(flags.app)); });
  }
  std::string config = read_text(dir / "config.json");
  const size_t at = config.find("\"lr\": 0.1");
  REQUIRE(at != std::string::npos);
  config.replace(at, 9, "\"lr\": \"0.1\"");
  std::ofstream(dir / "config.json", std::ios::trunc) << config;
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--resume", "--lr", "0.1"}) == -1);
  CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(flags.run, run_settings(flags.app)); }),
                       doctest::Contains("--lr \"0.1\" -> 0.1;"), Error);
}

TEST_CASE("run: a resume that changes settings records each change with its step in config.json") {
  fs::path dir = temp_dir("run_resume_history");
  {
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string(), "--lr", "0.1", "--threads", "1"}) == -1);
    capturing_stdout([&] {
      Run run(flags.run, run_settings(flags.app));
      run.begin_training(0);
    });
  }
  {
    DriverFlags flags;  // --threads may change; --lr only when asked
    REQUIRE(flags.parse({"--out", dir.string(), "--resume", "--lr", "0.1", "--threads", "2"}) == -1);
    capturing_stdout([&] {
      Run run(flags.run, run_settings(flags.app));
      run.begin_training(20);
    });
  }
  DriverFlags refused;
  REQUIRE(refused.parse({"--out", dir.string(), "--resume", "--lr", "0.05", "--threads", "2"}) == -1);
  CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(refused.run, run_settings(refused.app)); }),
                       doctest::Contains("--lr 0.1 -> 0.05; resume with the run's own settings, or add "
                                         "--resume-with-changes"),
                       Error);
  DriverFlags allowed;
  REQUIRE(allowed.parse({"--out", dir.string(), "--resume", "--resume-with-changes", "--lr", "0.05", "--threads",
                         "2"}) == -1);
  capturing_stdout([&] {
    Run run(allowed.run, run_settings(allowed.app));
    run.begin_training(40);
  });
  const json config = json::parse(read_text(dir / "config.json"));
  CHECK(config["lr"] == 0.05);
  REQUIRE(config.contains("changes_on_resume"));
  CHECK(config["changes_on_resume"] ==
        json::parse(R"([{"step": 20, "changed": {"threads": [1, 2]}}, {"step": 40, "changed": {"lr": [0.1, 0.05]}}])"));
}

TEST_CASE("run: --overwrite moves the earlier run's files aside when training begins; links are moved, not followed") {
  fs::path root = temp_dir("run_overwrite"), dir = root / "run";
  fs::create_directories(dir);
  std::ofstream(root / "elsewhere.txt") << "a file outside the run\n";
  std::ofstream(dir / "config.json") << "{\"seed\": 0}\n";
  std::ofstream(dir / "notes.txt") << "my notes\n";
  fs::create_symlink(root / "elsewhere.txt", dir / "metrics.jsonl");
  {
    DriverFlags plain;  // without --overwrite: refused, nothing touched
    REQUIRE(plain.parse({"--out", dir.string()}) == -1);
    CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(plain.run, run_settings(plain.app)); }),
                         doctest::Contains("holds a run (config.json, metrics.jsonl)"), Error);
  }
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--overwrite"}) == -1);
  capturing_stdout([&] {
    Run run(flags.run, run_settings(flags.app));
    CHECK(fs::exists(dir / "config.json"));  // nothing moves before training begins
    run.begin_training(0);
    run.log_train(1, 0.5);
  });
  CHECK(read_text(root / "elsewhere.txt") == "a file outside the run\n");
  std::vector<fs::path> aside;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind("replaced-", 0) == 0) aside.push_back(entry.path());
  REQUIRE(aside.size() == 1);
  CHECK(read_text(dir / "notes.txt") == "my notes\n");  // not a run's file: it stays
  CHECK(!fs::exists(aside[0] / "notes.txt"));
  CHECK(read_text(aside[0] / "config.json") == "{\"seed\": 0}\n");
  CHECK(fs::is_symlink(aside[0] / "metrics.jsonl"));
  CHECK(!fs::is_symlink(dir / "metrics.jsonl"));
  CHECK(read_text(dir / "metrics.jsonl").find("\"step\":1") != std::string::npos);
  CHECK(read_text(dir / "train.log").find("moved the earlier run's config.json, metrics.jsonl into") !=
        std::string::npos);
}

TEST_CASE("run: a resumed run never writes through a link in its directory") {
  fs::path root = temp_dir("run_link"), dir = root / "run";
  {
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string()}) == -1);
    capturing_stdout([&] {
      Run run(flags.run, run_settings(flags.app));
      run.begin_training(0);
    });
  }
  std::ofstream(root / "precious.txt") << "not a log\n";
  fs::remove(dir / "train.log");
  fs::create_symlink(root / "precious.txt", dir / "train.log");
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--resume"}) == -1);
  CHECK_THROWS_WITH_AS(capturing_stdout([&] {
                         Run run(flags.run, run_settings(flags.app));
                         run.begin_training(0);
                       }),
                       doctest::Contains("train.log' is a symbolic link"), Error);
  CHECK(read_text(root / "precious.txt") == "not a log\n");
}

TEST_CASE("run: a FIFO among the run's files is refused before it is opened, which would wait for ever") {
  fs::path dir = temp_dir("run_fifo") / "run";
  {
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string()}) == -1);
    capturing_stdout([&] { Run run(flags.run, run_settings(flags.app)); });
  }
  fs::remove(dir / "train.log");
  REQUIRE(::mkfifo((dir / "train.log").c_str(), 0644) == 0);
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--resume"}) == -1);
  CHECK_THROWS_WITH_AS(capturing_stdout([&] {
                         Run run(flags.run, run_settings(flags.app));
                         run.begin_training(0);
                       }),
                       doctest::Contains("train.log' is not a regular file (a FIFO, a device or a folder)"), Error);
}

TEST_CASE("run: a link at <out>/.lock and an --out too long for the system are said as such") {
  fs::path root = temp_dir("run_lock_link"), dir = root / "run";
  fs::create_directories(dir);
  std::ofstream(root / "precious.txt") << "mine\n";
  fs::create_symlink(root / "precious.txt", dir / ".lock");
  RunOptions options{.out = dir.string()};
  CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(options); }),
                       doctest::Contains(".lock' is a symbolic link; the run does not write through links"), Error);
  CHECK(read_text(root / "precious.txt") == "mine\n");

  options.out = (root / std::string(NAME_MAX + 1, 'n')).string();  // not "the filesystem's root"
  const std::string name_limit =
      fmt::format("has {} bytes, and this system allows {} for one name (NAME_MAX)", NAME_MAX + 1, NAME_MAX);
  CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(options); }), doctest::Contains(name_limit.c_str()), Error);
  options.out.clear();
  for (int i = 0; i < PATH_MAX / 8 + 1; ++i) options.out += "/abcdefg";
  const std::string path_limit = fmt::format("and this system allows {} for a path (PATH_MAX)", PATH_MAX - 1);
  CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(options); }), doctest::Contains(path_limit.c_str()), Error);
}

TEST_CASE("errors: a std::filesystem error is said in our words, with the path and the cause") {
  const std::error_code too_long = std::make_error_code(std::errc::filename_too_long);
  CHECK(error_message(fs::filesystem_error("cannot create directories", fs::path("/a/b"),
                                           std::make_error_code(std::errc::not_a_directory))) ==
        "cannot create the folder '/a/b': Not a directory");
  CHECK(error_message(fs::filesystem_error("status", fs::path("/a/b"), too_long)) ==
        fmt::format("cannot look at '/a/b': File name too long (the limits are {} bytes for a path and {} for one "
                    "name in it)", PATH_MAX - 1, NAME_MAX));
  CHECK(error_message(fs::filesystem_error("cannot rename", fs::path("/a"), fs::path("/b"),
                                           std::make_error_code(std::errc::permission_denied))) ==
        "cannot move '/a' to '/b': Permission denied");
  CHECK(error_message(fs::filesystem_error("directory iterator cannot open directory", fs::path("/a"),
                                           std::make_error_code(std::errc::permission_denied))) ==
        "cannot list the folder '/a': Permission denied");
  CHECK(error_message(Error("ours")) == "ours");
  // report_errors prints it as one line: never "filesystem error: ...".
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  const int code = report_errors([] { (void)fs::directory_iterator("/nowhere/at/all"); });
  std::cerr.rdbuf(old);
  CHECK(code == 1);
  CHECK(err.str() == "error: cannot list the folder '/nowhere/at/all': No such file or directory\n");
}

TEST_CASE("run: an --out that cannot be created is one clear error naming the path") {
  fs::path dir = temp_dir("run_unwritable");
  fs::create_directories(dir);
  std::ofstream(dir / "a_file") << "not a directory\n";
  for (const std::string& out : {(dir / "a_file" / "run").string(), (dir / "a_file").string(),
                                 std::string("/proc/rg_scaffold_run")}) {
    CAPTURE(out);
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", out}) == -1);
    std::string quoted = "'" + out + "'";
    CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(flags.run, run_settings(flags.app)); }), doctest::Contains(quoted.c_str()),
                         Error);
  }

  // report_errors turns it into "error: ..." and exit code 1.
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", (dir / "a_file" / "run").string()}) == -1);
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  int code = report_errors([&] { Run run(flags.run, run_settings(flags.app)); });
  std::cerr.rdbuf(old);
  CHECK(code == 1);
  CHECK(err.str().rfind("error: cannot create the run directory", 0) == 0);
  CHECK(report_errors([] { return 3; }) == 3);
  CHECK(report_errors([] {}) == 0);
}

TEST_CASE("run: a path that is not UTF-8 is recorded and shown escaped, and a resume finds it the same") {
  const fs::path root = temp_dir("run_bytes"), dir = root / "run\xff";
  fs::create_directories(root);
  const std::string config_file = (root / "c\xfe.toml").string();
  std::ofstream(config_file) << "lr = 0.5\n";
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--config", config_file}) == -1);
  std::string printed = capturing_stdout([&] {
    Run run(flags.run, run_settings(flags.app));
    run.begin_training(0);
  });
  const json config = json::parse(read_text(dir / "config.json"));
  CHECK(config["out"] == escape_bytes(dir.string()));
  CHECK(config["out"].get<std::string>().ends_with("run\\xff"));  // the byte 0xff as the text \xff
  CHECK(config["config"].get<std::string>().ends_with("c\\xfe.toml"));
  CHECK(printed.find("run\\xff (fresh)") != std::string::npos);
  CHECK(read_text(dir / "train.log").find("c\\xfe.toml") != std::string::npos);
  // Resumed with the same bytes: the same settings, nothing noted as changed.
  DriverFlags again;
  REQUIRE(again.parse({"--out", dir.string(), "--config", config_file, "--resume"}) == -1);
  printed = capturing_stdout([&] {
    Run run(again.run, run_settings(again.app));
    run.begin_training(0);
  });
  CHECK(printed.find("changed on resume") == std::string::npos);
  // A Run made in code records its RunOptions (settings_of) the same way.
  const fs::path coded = root / "d\xfe";
  capturing_stdout([&] {
    Run run({.out = coded.string()});
    run.begin_training(0);
  });
  CHECK(json::parse(read_text(coded / "config.json"))["out"].get<std::string>().ends_with("d\\xfe"));
  // An error naming such a path is one line, the byte written as \xfe.
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  CHECK(report_errors([&] { Run run({.out = (root / "no\xfe\nwhere").string(), .resume = true}); }) == 1);
  std::cerr.rdbuf(old);
  const std::string line = err.str();
  CHECK(line.find("no\\xfe\\x0awhere' (no such directory)") != std::string::npos);
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
}

TEST_CASE("run: a bad OMP_NUM_THREADS is refused, naming it, before anything is written") {
  const char* before = std::getenv("OMP_NUM_THREADS");
  const std::string saved = before ? before : "";
  struct Case {
    const char* value;
    const char* message;
  };
  const fs::path dir = temp_dir("run_omp");
  for (const Case& c : {Case{"abc", "OMP_NUM_THREADS is 'abc', not a number of threads; give 1 to 4096 threads"},
                        Case{"0", "OMP_NUM_THREADS is '0': no threads"}, Case{"-3", "is '-3', not a number"},
                        Case{"", "OMP_NUM_THREADS is set but empty"}, Case{"1e12", "is '1e12', not a number"},
                        Case{"99999", "is '99999', more threads than the 4096"},
                        Case{"99999999999999999999999", "more threads than the 4096"},
                        Case{"2,0", "'2,0': no threads for a nested level"}, Case{"2,", "not a number"},
                        Case{"+2", "not a number"}, Case{"2 3", "not a number"}}) {
    CAPTURE(c.value);
    ::setenv("OMP_NUM_THREADS", c.value, 1);
    CHECK(omp_num_threads_problem().find(c.message) != std::string::npos);
    CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run({.out = dir.string()}); }), doctest::Contains(c.message),
                         Error);
    CHECK(!fs::exists(dir));
  }
  // What libgomp reads and a run can honour: a list counts its first number.
  for (const char* good : {"1", "2,1", " 3 ", "\t4", "02", "4096", "3,99999"}) {
    CAPTURE(good);
    ::setenv("OMP_NUM_THREADS", good, 1);
    CHECK(omp_num_threads_problem().empty());
  }
  ::unsetenv("OMP_NUM_THREADS");
  CHECK(omp_num_threads_problem().empty());
  if (before) ::setenv("OMP_NUM_THREADS", saved.c_str(), 1);
}

// ---- progress ----

TEST_CASE("progress: rate and ETA on a terminal, nothing otherwise") {
  CHECK(progress_line("train", 50, 100, 10.0) == "train [##########..........]  50%   50/100  10.0 steps/s  ETA 00:00:05");
  CHECK(format_duration(3 * 3600 + 4 * 60 + 5) == "03:04:05");
  CHECK(format_duration(90000) == "1d 01:00:00");
  std::ostringstream on, off;
  {
    ProgressBar bar(10, "x", on, true);
    ProgressBar silent(10, "x", off, false);
    for (int i = 0; i <= 10; ++i) bar.update(i), silent.update(i);
  }
  CHECK(on.str().find('\r') != std::string::npos);
  CHECK(on.str().find("ETA") != std::string::npos);
  CHECK(on.str().back() == '\n');
  CHECK(off.str().empty());
}
