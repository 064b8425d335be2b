// The experiment scaffold: flags and config files, the run directory and its
// logs (config.json, metrics.jsonl, resume), clear errors, the progress bar,
// deterministic shuffling and exact cursor resume, bucketed batches and
// padding, vocabularies.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "rmsgrad/data/batching.h"
#include "rmsgrad/experiments/common/progress.h"
#include "rmsgrad/experiments/common/run.h"
#include "rmsgrad/experiments/common/vocab.h"
#include "rmsgrad/rmsgrad.h"

using namespace rg;
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

// A driver's flags: the run options plus two of its own.
struct DriverFlags {
  RunOptions run;
  double lr = 0.01;
  std::string norm = "rms";
  std::vector<int> hidden{64, 32};
  CLI::App app{"test driver"};
  DriverFlags() {
    add_run_options(app, run);
    app.add_option("--lr", lr, "learning rate");
    app.add_option("--norm", norm, "normalization")->check(CLI::IsMember({"rms", "layer", "none"}));
    app.add_option("--hidden", hidden, "hidden sizes");
  }
  // Parses; returns the exit code (or -1 to go on) and what was printed.
  int parse(std::vector<std::string> args, std::string* out_text = nullptr, std::string* err_text = nullptr) {
    args.insert(args.begin(), "driver");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    std::optional<int> code = parse_flags(app, static_cast<int>(argv.size()), argv.data(), out, err);
    if (out_text) *out_text = out.str();
    if (err_text) *err_text = err.str();
    return code.value_or(-1);
  }
};

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

// ---- flags ----

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

TEST_CASE("flags: a config file sets flags, the command line overrides it, unknown keys fail") {
  fs::path dir = temp_dir("config_file");
  fs::create_directories(dir);
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

// ---- the run directory ----

TEST_CASE("run: creates --out, saves every flag to config.json, prints the header") {
  fs::path dir = temp_dir("run_config") / "nested" / "run";
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--seed", "3", "--lr", "0.125", "--hidden", "5", "6"}) == -1);
  std::string printed = capturing_stdout([&] { Run run(flags.app, flags.run); });
  REQUIRE(fs::is_directory(dir));
  json config = json::parse(read_text(dir / "config.json"));
  for (const char* name : {"config", "seed", "threads", "out", "resume", "resume-with-changes", "overwrite",
                           "log-every", "lr", "norm", "hidden"}) {
    CAPTURE(name);
    CHECK(config.contains(name));
    CHECK(printed.find(std::string("--") + name) != std::string::npos);
  }
  CHECK(config.size() == 11);  // and nothing else (no --help)
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
    Run run(flags.app, flags.run);
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
      Run run(flags.app, flags.run);
      run.begin_training(0);
      for (int step = 10; step <= 40; step += 10) run.log_train(step, 1.0 / step);
      run.log_eval("valid", 20, 0.5);
    });
    std::ofstream(dir / "metrics.jsonl", std::ios::app) << "{\"step\": 50, \"spl";  // torn by a crash
  }
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--resume", "--resume-with-changes", "--lr", "0.05"}) == -1);
  std::string printed = capturing_stdout([&] {
    Run run(flags.app, flags.run);
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

TEST_CASE("run: a resume that changes settings records each change with its step in config.json") {
  fs::path dir = temp_dir("run_resume_history");
  {
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string(), "--lr", "0.1", "--threads", "1"}) == -1);
    capturing_stdout([&] {
      Run run(flags.app, flags.run);
      run.begin_training(0);
    });
  }
  {
    DriverFlags flags;  // --threads may change; --lr only when asked
    REQUIRE(flags.parse({"--out", dir.string(), "--resume", "--lr", "0.1", "--threads", "2"}) == -1);
    capturing_stdout([&] {
      Run run(flags.app, flags.run);
      run.begin_training(20);
    });
  }
  DriverFlags refused;
  REQUIRE(refused.parse({"--out", dir.string(), "--resume", "--lr", "0.05", "--threads", "2"}) == -1);
  CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(refused.app, refused.run); }),
                       doctest::Contains("--lr 0.1 -> 0.05; resume with the run's own settings, or add "
                                         "--resume-with-changes"),
                       Error);
  DriverFlags allowed;
  REQUIRE(allowed.parse({"--out", dir.string(), "--resume", "--resume-with-changes", "--lr", "0.05", "--threads",
                         "2"}) == -1);
  capturing_stdout([&] {
    Run run(allowed.app, allowed.run);
    run.begin_training(40);
  });
  const json config = json::parse(read_text(dir / "config.json"));
  CHECK(config["lr"] == 0.05);
  REQUIRE(config.contains("changes_on_resume"));
  CHECK(config["changes_on_resume"] ==
        json::parse(R"([{"step": 20, "changed": {"threads": [1, 2]}}, {"step": 40, "changed": {"lr": [0.1, 0.05]}}])"));
}

TEST_CASE("run: --overwrite moves the earlier run aside when training begins; links are moved, not followed") {
  fs::path root = temp_dir("run_overwrite"), dir = root / "run";
  fs::create_directories(dir);
  std::ofstream(root / "elsewhere.txt") << "a file outside the run\n";
  std::ofstream(dir / "config.json") << "{\"seed\": 0}\n";
  std::ofstream(dir / "notes.txt") << "my notes\n";
  fs::create_symlink(root / "elsewhere.txt", dir / "metrics.jsonl");
  {
    DriverFlags plain;  // without --overwrite: refused, nothing touched
    REQUIRE(plain.parse({"--out", dir.string()}) == -1);
    CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(plain.app, plain.run); }),
                         doctest::Contains("holds a run (config.json, metrics.jsonl)"), Error);
  }
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--overwrite"}) == -1);
  capturing_stdout([&] {
    Run run(flags.app, flags.run);
    CHECK(read_text(dir / "notes.txt") == "my notes\n");  // nothing moves before training begins
    run.begin_training(0);
    run.log_train(1, 0.5);
  });
  CHECK(read_text(root / "elsewhere.txt") == "a file outside the run\n");
  std::vector<fs::path> aside;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind("replaced-", 0) == 0) aside.push_back(entry.path());
  REQUIRE(aside.size() == 1);
  CHECK(read_text(aside[0] / "notes.txt") == "my notes\n");
  CHECK(read_text(aside[0] / "config.json") == "{\"seed\": 0}\n");
  CHECK(fs::is_symlink(aside[0] / "metrics.jsonl"));
  CHECK(!fs::is_symlink(dir / "metrics.jsonl"));
  CHECK(read_text(dir / "metrics.jsonl").find("\"step\":1") != std::string::npos);
}

TEST_CASE("run: a resumed run never writes through a link in its directory") {
  fs::path root = temp_dir("run_link"), dir = root / "run";
  {
    DriverFlags flags;
    REQUIRE(flags.parse({"--out", dir.string()}) == -1);
    capturing_stdout([&] {
      Run run(flags.app, flags.run);
      run.begin_training(0);
    });
  }
  std::ofstream(root / "precious.txt") << "not a log\n";
  fs::remove(dir / "train.log");
  fs::create_symlink(root / "precious.txt", dir / "train.log");
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", dir.string(), "--resume"}) == -1);
  CHECK_THROWS_WITH_AS(capturing_stdout([&] {
                         Run run(flags.app, flags.run);
                         run.begin_training(0);
                       }),
                       doctest::Contains("train.log' is a symbolic link"), Error);
  CHECK(read_text(root / "precious.txt") == "not a log\n");
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
    CHECK_THROWS_WITH_AS(capturing_stdout([&] { Run run(flags.app, flags.run); }), doctest::Contains(quoted.c_str()),
                         Error);
  }

  // report_errors turns it into "error: ..." and exit code 1.
  DriverFlags flags;
  REQUIRE(flags.parse({"--out", (dir / "a_file" / "run").string()}) == -1);
  std::ostringstream err;
  std::streambuf* old = std::cerr.rdbuf(err.rdbuf());
  int code = report_errors([&] { Run run(flags.app, flags.run); });
  std::cerr.rdbuf(old);
  CHECK(code == 1);
  CHECK(err.str().rfind("error: cannot create the run directory", 0) == 0);
  CHECK(report_errors([] { return 3; }) == 3);
  CHECK(report_errors([] {}) == 0);
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

// ---- batching ----

TEST_CASE("shuffle: Fisher-Yates from the seed, the same order every time") {
  Generator a(42), b(42), c(43);
  std::vector<int64_t> first = shuffled_indices(1000, a), second = shuffled_indices(1000, b);
  CHECK(first == second);
  CHECK(first != shuffled_indices(1000, c));
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) CHECK(sorted[static_cast<size_t>(i)] == i);
  // Pinned, so that a change to the generator or the shuffle, which would
  // change the data order of every experiment, is noticed.
  Generator pinned(0);
  CHECK(shuffled_indices(10, pinned) == std::vector<int64_t>{6, 3, 2, 9, 8, 1, 4, 7, 0, 5});
  CHECK(pinned.offset() == 9);  // one draw per swap
}

TEST_CASE("cursor: every example once per epoch, and a restored cursor continues identically") {
  BatchCursor cursor(shuffled_batches(10, 4), 7);
  CHECK(cursor.batches_per_epoch() == 3);  // 4 + 4 + 2
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::multiset<int64_t> seen;
    for (int i = 0; i < 3; ++i)
      for (int64_t index : cursor.next()) seen.insert(index);
    CHECK(seen.size() == 10);
    CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == 10);
    CHECK(cursor.epoch() == epoch);
  }
  CHECK(BatchCursor(shuffled_batches(10, 4, true), 7).batches_per_epoch() == 2);

  // Save mid-epoch (and at an epoch's end), restore into a fresh cursor, compare.
  for (int taken : {5, 6, 0}) {
    CAPTURE(taken);
    BatchCursor original(length_bucketed_batches({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}, {2, 0, 2}), 99);
    for (int i = 0; i < taken; ++i) original.next();
    std::string saved = original.state().to_string();
    BatchCursor restored(length_bucketed_batches({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}, {2, 0, 2}), 12345);
    restored.restore(CursorState::from_string(saved));
    CHECK(restored.state() == original.state());
    for (int i = 0; i < 20; ++i) CHECK(restored.next() == original.next());
    CHECK(restored.epoch() == original.epoch());
  }
  BatchCursor small(shuffled_batches(4, 2), 1);
  CHECK_THROWS_WITH_AS(small.restore({0, 5, 1, 0}), doctest::Contains("past the 2 batches"), Error);
  CHECK_THROWS_AS(CursorState::from_string("{\"epoch\": 1}"), Error);
}

TEST_CASE("buckets: every sentence once, similar lengths together, size and token limits") {
  Generator gen(5);
  std::vector<int64_t> lengths;
  for (int i = 0; i < 1000; ++i) lengths.push_back(1 + gen.randint(50));
  BucketOptions options;
  options.max_sentences = 16;
  options.max_tokens = 400;
  options.bucket_batches = 10;
  EpochPlanner planner = length_bucketed_batches(lengths, options);
  Generator epoch_gen(1);
  EpochPlan plan = planner(epoch_gen);
  std::vector<int> count(1000, 0);
  int64_t padded = 0, real = 0;
  for (const Batch& batch : plan) {
    REQUIRE(!batch.empty());
    CHECK(static_cast<int64_t>(batch.size()) <= options.max_sentences);
    int64_t longest = 0;
    for (int64_t i : batch) {
      ++count[static_cast<size_t>(i)];
      longest = std::max(longest, lengths[static_cast<size_t>(i)]);
      real += lengths[static_cast<size_t>(i)];
    }
    CHECK(static_cast<int64_t>(batch.size()) * longest <= options.max_tokens);
    padded += static_cast<int64_t>(batch.size()) * longest;
  }
  for (int c : count) CHECK(c == 1);
  CHECK(static_cast<double>(real) / static_cast<double>(padded) > 0.9);  // little padding
  // A sentence longer than max_tokens gets a batch of its own.
  Generator g2(0);
  EpochPlan alone = length_bucketed_batches({3, 500, 3}, {8, 100, 4})(g2);
  CHECK(alone.size() == 2);
}

TEST_CASE("pad_batch: [T, B] ids padded with 0 and a 1/0 mask") {
  std::vector<std::vector<int32_t>> sentences = {{5, 6, 7}, {8}, {9, 10}};
  std::vector<int64_t> batch = {2, 0, 1};
  PaddedBatch padded = pad_batch(sentences, batch);
  CHECK(padded.ids.shape == Shape{3, 3});
  CHECK(padded.mask.shape() == Shape{3, 3});
  CHECK(padded.lengths == std::vector<int64_t>{2, 3, 1});
  // Row t holds token t of every sentence.
  CHECK(padded.ids.values == std::vector<int32_t>{9, 5, 8, 10, 6, 0, 0, 7, 0});
  CHECK(padded.mask.to_vector() == std::vector<float>{1, 1, 1, 1, 1, 0, 0, 1, 0});
  CHECK(padded.time_steps() == 3);
  CHECK(padded.batch_size() == 3);
  std::vector<int64_t> outside = {3};
  CHECK_THROWS_AS(pad_batch(sentences, outside), Error);
}

// ---- vocabulary ----

TEST_CASE("vocab: reserved ids, counts order, <unk>, and a round trip through the file") {
  TokenCounts counts;
  count_tokens("the cat sat on the mat\nthe dog", counts);
  count_tokens("a  cat\tran", counts);
  Vocab vocab = Vocab::from_counts(counts, 1, 0);
  CHECK(vocab.id("<pad>") == 0);
  CHECK(Vocab::kPad == 0);
  CHECK(vocab.id("<unk>") == Vocab::kUnk);
  CHECK(vocab.id("<s>") == Vocab::kBos);
  CHECK(vocab.id("</s>") == Vocab::kEos);
  CHECK(vocab.token(4) == "the");  // 3 times
  CHECK(vocab.token(5) == "cat");  // 2 times
  CHECK(vocab.token(6) == "a");    // then by bytes
  CHECK(vocab.size() == 4 + 8);
  CHECK(vocab.id("zebra") == Vocab::kUnk);
  CHECK(vocab.encode("the zebra sat") == std::vector<int32_t>{4, Vocab::kUnk, vocab.id("sat")});
  std::vector<int32_t> ids = {Vocab::kBos, 4, 5, Vocab::kEos, 0, 0};
  CHECK(vocab.decode(ids) == "the cat");

  Vocab limited = Vocab::from_counts(counts, 2, 0);
  CHECK(limited.size() == 6);
  CHECK(Vocab::from_counts(counts, 1, 5).size() == 5);
  CHECK(Vocab::from_counts(counts, 1, 5).token(4) == "the");

  fs::path dir = temp_dir("vocab");
  fs::create_directories(dir);
  vocab.save((dir / "vocab.txt").string());
  Vocab loaded = Vocab::load((dir / "vocab.txt").string());
  REQUIRE(loaded.size() == vocab.size());
  for (int32_t i = 0; i < vocab.size(); ++i) CHECK(loaded.token(i) == vocab.token(i));
  CHECK(loaded.id("zebra") == Vocab::kUnk);

  std::ofstream(dir / "bad.txt") << "<pad>\n<unk>\n<s>\n</s>\ncat\ndog\ncat\n";
  CHECK_THROWS_WITH_AS(Vocab::load((dir / "bad.txt").string()), doctest::Contains("line 7: 'cat' repeats line 5"),
                       Error);
  std::ofstream(dir / "unreserved.txt") << "cat\n";
  CHECK_THROWS_WITH_AS(Vocab::load((dir / "unreserved.txt").string()),
                       doctest::Contains("expected the reserved token <pad>"), Error);
  CHECK_THROWS_WITH_AS(Vocab::load((dir / "missing.txt").string()), doctest::Contains("missing.txt"), Error);
}
