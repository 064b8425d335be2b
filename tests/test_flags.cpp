// The flags every driver shares and their strict parsing
// (experiments/common/flags.h): defaults and --help, one clear error line for
// a bad flag or value, config files.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "driver_flags.h"
#include "test_util.h"

using namespace rg;
using test::DriverFlags;

TEST_CASE("flags: defaults, values, and --help") {
  DriverFlags flags;
  CHECK(flags.parse({}) == -1);
  CHECK(flags.run.seed == 0);
  CHECK(flags.run.log_every == 100);

  DriverFlags given;
  REQUIRE(given.parse({"--seed", "7", "--threads", "2", "--out", "/tmp/x", "--resume", "--log-every", "10", "--lr",
                       "0.5", "--norm", "layer", "--hidden", "8", "4", "2"}) == -1);
  CHECK(given.run.seed == 7);
  CHECK(given.run.threads == 2);
  CHECK(given.run.out == "/tmp/x");
  CHECK(given.run.resume);
  CHECK(given.run.log_every == 10);
  CHECK(given.lr == 0.5);
  CHECK(given.norm == "layer");
  CHECK(given.hidden == std::vector<int>{8, 4, 2});

  DriverFlags help;
  std::string out;
  CHECK(help.parse({"--help"}, &out) == 0);
  CHECK(out.find("--log-every") != std::string::npos);
  CHECK(out.find("--lr") != std::string::npos);
}

TEST_CASE("flags: an unknown flag or a bad value is one clear error line") {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{{{"--sede", "3"}, "--sede"},
                                         {{"--seed", "abc"}, "--seed"},
                                         {{"--log-every", "0"}, "--log-every"},
                                         {{"--threads", "-1"}, "--threads"},
                                         {{"--norm", "batch"}, "--norm"},
                                         {{"stray"}, "stray"},
                                         {{"--config", "/nonexistent/run.toml"}, "/nonexistent/run.toml"}}) {
    DriverFlags flags;
    std::string err;
    CAPTURE(c.args[0]);
    CHECK(flags.parse(c.args, nullptr, &err) == 2);
    CHECK(err.rfind("error: ", 0) == 0);
    CHECK(err.find(c.expected) != std::string::npos);
    CHECK(err.find("--help") != std::string::npos);
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  }
}

TEST_CASE("flags: unknown flags are named in the order given, not CLI11's reversed list") {
  DriverFlags flags;
  std::string err;
  CHECK(flags.parse({"--bogus-flag", "3"}, nullptr, &err) == 2);
  CHECK(err.rfind("error: unknown flag --bogus-flag; see ", 0) == 0);
  CHECK(err.find("not expected") == std::string::npos);

  DriverFlags two;
  err.clear();
  CHECK(two.parse({"--first", "1", "--second=2"}, nullptr, &err) == 2);
  CHECK(err.rfind("error: unknown flags --first, --second; see ", 0) == 0);

  DriverFlags stray;
  err.clear();
  CHECK(stray.parse({"a", "b"}, nullptr, &err) == 2);
  CHECK(err.rfind("error: unexpected words a b ", 0) == 0);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
}

TEST_CASE("flags: a value that is not UTF-8 (a path) is recorded escaped; an error line shows it escaped") {
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", "run\xff/\xc3\xa9"}) == -1);
  CHECK(flags.run.out == "run\xff/\xc3\xa9");  // the path itself is the bytes given
  const nlohmann::ordered_json settings = flag_settings(flags.app);
  CHECK(settings["out"] == "run\\xff/\xc3\xa9");
  CHECK_NOTHROW(settings.dump());
  CHECK_NOTHROW(run_settings(flags.app));
  DriverFlags bad;
  std::string err;
  CHECK(bad.parse({"--sede\xfe", "3"}, nullptr, &err) == 2);
  CHECK(err.find("--sede\\xfe") != std::string::npos);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
}

TEST_CASE("flags: a config file sets flags, the command line overrides it, unknown keys fail") {
  const test::TempDir tmp("config_file");
  const std::filesystem::path& dir = tmp.path;
  std::ofstream(dir / "run.toml") << "# a run\nseed = 11\nlr = 0.25\nnorm = \"layer\"\nlog-every = 5\nresume = true\n";
  DriverFlags flags;
  REQUIRE(flags.parse({"--config", (dir / "run.toml").string(), "--seed", "12"}) == -1);
  CHECK(flags.run.seed == 12);
  CHECK(flags.lr == 0.25);
  CHECK(flags.norm == "layer");
  CHECK(flags.run.log_every == 5);
  CHECK(flags.run.resume);

  std::ofstream(dir / "run.ini") << "[default]\nlr = 0.5\n";
  DriverFlags ini;
  REQUIRE(ini.parse({"--config", (dir / "run.ini").string()}) == -1);
  CHECK(ini.lr == 0.5);

  std::ofstream(dir / "typo.toml") << "lrr = 0.1\n";
  DriverFlags typo;
  std::string err;
  CHECK(typo.parse({"--config", (dir / "typo.toml").string()}, nullptr, &err) == 2);
  CHECK(err.find("unknown setting 'lrr'") != std::string::npos);
  CHECK(err.find("typo.toml") != std::string::npos);
}

TEST_CASE("flags: --help that cannot be written is an error, not exit 0") {
  CLI::App app{"test"};
  RunOptions options;
  add_run_options(app, options);
  const char* argv[] = {"prog", "--help"};
  std::ostream lost(nullptr);  // a stream that fails every write, as stdout on a full disk does
  std::ostringstream err;
  CHECK(parse_flags(app, 2, argv, lost, err) == 1);
  const std::string text = err.str();
  CHECK(text.rfind("error: prog --help: the help text could not be written", 0) == 0);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}

TEST_CASE("flags: an unknown flag is named before a missing required argument") {
  CLI::App app{"test"};
  std::vector<std::string> runs;
  app.add_option("runs", runs, "runs")->required();
  const char* argv[] = {"paper_table", "--no-such-flag"};
  std::ostringstream out, err;
  CHECK(parse_flags(app, 2, argv, out, err) == 2);
  CHECK(err.str().find("--no-such-flag") != std::string::npos);
  CHECK(err.str().find("required") == std::string::npos);
}
