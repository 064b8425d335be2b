// The paper-style results table over sibling run directories.
#include <doctest/doctest.h>

#include <cmath>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "experiments/common/results_table.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

// A run whose train lines take `per_1k` seconds per 1k steps (the first line
// slower, as warm-up is) and whose last valid line has error `error`.
void write_run(const fs::path& dir, const std::string& norm, double per_1k, double error) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{\"norm\": \"" << norm << "\", \"seed\": 0}\n";
  std::ofstream m(dir / "metrics.jsonl");
  m << R"({"step": 0, "split": "valid", "loss": 2.3, "time_sec": 0, "error_pct": 90})" << "\n";
  m << R"({"step": 100, "split": "train", "loss": 2.0, "time_sec": 1, "sec_per_1k_steps": )" << per_1k * 3
    << R"(, "epoch": 0.5})" << "\n";
  for (int i = 2; i <= 4; ++i)
    m << R"({"step": )" << i * 100 << R"(, "split": "train", "loss": 1.0, "time_sec": 1, "sec_per_1k_steps": )"
      << per_1k << R"(, "epoch": )" << i * 0.5 << "}\n";
  m << R"({"step": 400, "split": "valid", "loss": 1.1, "time_sec": 1, "error_pct": )" << error << "}\n";
}

}  // namespace

TEST_CASE("the table shows the final metric, the median time and the speedup against LayerNorm") {
  TempDir tmp("table");
  write_run(tmp.path / "b", "rmsnorm", 80.0, 11.5);
  write_run(tmp.path / "a", "layernorm", 100.0, 12.25);
  write_run(tmp.path / "c", "none", 50.0, 20.0);
  std::vector<fs::path> dirs = find_run_dirs({tmp.path.string()});
  REQUIRE(dirs.size() == 3);

  TableOptions options;
  options.metrics = {"error_pct"};
  options.splits = {"valid", "test"};
  const std::string table = results_table(dirs, options);
  // Paper order: none, layernorm, rmsnorm; no test lines → "–".
  CHECK(table ==
        "| norm      | valid error_pct | test error_pct | s per 1k steps | speedup vs LayerNorm |\n"
        "|-----------|-----------------|----------------|----------------|----------------------|\n"
        "| none      |           20.00 |              – |           50.0 |                50.0% |\n"
        "| layernorm |           12.25 |              – |          100.0 |                    – |\n"
        "| rmsnorm   |           11.50 |              – |           80.0 |                20.0% |\n");

  // Per epoch: 200 steps per epoch at 0.1 s per step for LayerNorm.
  options.time = TimeUnit::PerEpoch;
  options.splits = {"valid"};
  RunSummary ln = summarize_run(tmp.path / "a", options);
  CHECK(ln.label == "layernorm");
  CHECK(ln.seconds == doctest::Approx(20.0));
  CHECK(ln.metric[0] == doctest::Approx(12.25));

  // Several metrics per split (Table 7's recalls): split-major columns.
  options.metrics = {"error_pct", "loss"};
  options.splits = {"valid", "test"};
  ln = summarize_run(tmp.path / "a", options);
  REQUIRE(ln.metric.size() == 4);
  CHECK(ln.metric[0] == doctest::Approx(12.25));  // valid error_pct
  CHECK(ln.metric[1] == doctest::Approx(1.1));    // valid loss, from the last valid line
  CHECK(std::isnan(ln.metric[2]));
  CHECK(results_table(dirs, options).rfind("| norm      | valid error_pct | valid loss | test error_pct | test loss |", 0) ==
        0);
}

TEST_CASE("bad run directories are named in the error") {
  TempDir tmp("table");
  CHECK_THROWS_WITH_AS(find_run_dirs({(tmp.path / "missing").string()}), doctest::Contains("is not a directory"), Error);
  CHECK_THROWS_WITH_AS(find_run_dirs({tmp.path.string()}), doctest::Contains("holds no run"), Error);
  fs::create_directories(tmp.path / "r");
  std::ofstream(tmp.path / "r" / "metrics.jsonl") << "{\"step\": 1, \"split\": \"train\"}\nnot json\n";
  CHECK_THROWS_WITH_AS(summarize_run(tmp.path / "r", TableOptions{}), doctest::Contains("line 2"), Error);
}
