// The paper-style results table over sibling run directories.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/results_table.h"
#include "rmsgrad/experiments/common/seed_statistics.h"
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

// Run `<norm>-seed<seed>` under root, its validation `metric` evaluated every
// `every` steps from step 0 (time_sec = the step).
void write_seed_run(const fs::path& root, const std::string& norm, int seed, const std::string& metric,
                    const std::vector<double>& values, int every) {
  const fs::path dir = root / (norm + "-seed" + std::to_string(seed));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{\"norm\": \"" << norm << "\", \"seed\": " << seed << "}\n";
  std::ofstream m(dir / "metrics.jsonl");
  for (size_t i = 0; i < values.size(); ++i)
    m << R"({"step": )" << every * i << R"(, "split": "valid", "loss": 1.0, "time_sec": )" << every * i << R"(, ")"
      << metric << R"(": )" << values[i] << "}\n";
}

// One fused line of bench_norm_impl's paired timing (NaN bounds: no interval).
std::string fused_line(const std::string& model, const std::string& norm, double ms, double ratio, double low,
                       double high) {
  const auto bound = [](double v) { return std::isnan(v) ? std::string("null") : fmt::format("{}", v); };
  return fmt::format(R"({{"model": "{}", "impl": "fused", "norm": "{}", "threads": 1, "pairs": 20, "ms_per_step": {}, )"
                     R"("ratio_vs_layernorm": {}, "ci95_low": {}, "ci95_high": {}}})",
                     model, norm, ms, ratio, bound(low), bound(high)) +
         "\n";
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
  CHECK(results_table(dirs, options)
            .rfind("| norm      | valid error_pct | valid loss | test error_pct | test loss |", 0) == 0);
}

TEST_CASE("bad run directories are named in the error") {
  TempDir tmp("table");
  CHECK_THROWS_WITH_AS(find_run_dirs({(tmp.path / "missing").string()}), doctest::Contains("is not a directory"),
                       Error);
  CHECK_THROWS_WITH_AS(find_run_dirs({tmp.path.string()}), doctest::Contains("holds no run"), Error);
  // A run moved aside by --overwrite is not the folder's run: tabulated only when named.
  write_run(tmp.path / "a" / "replaced-20261204-120000", "layernorm", 100.0, 12.25);
  CHECK_THROWS_WITH_AS(find_run_dirs({(tmp.path / "a").string()}),
                       doctest::Contains("holds no run, only 1 earlier run that --overwrite moved aside"), Error);
  CHECK(find_run_dirs({(tmp.path / "a" / "replaced-20261204-120000").string()}).size() == 1);
  write_run(tmp.path / "a" / "seed1", "layernorm", 100.0, 12.0);
  CHECK(find_run_dirs({(tmp.path / "a").string()}) == std::vector<fs::path>{tmp.path / "a" / "seed1"});
  fs::create_directories(tmp.path / "r");
  std::ofstream(tmp.path / "r" / "metrics.jsonl") << "{\"step\": 1, \"split\": \"train\"}\nnot json\n";
  CHECK_THROWS_WITH_AS(summarize_run(tmp.path / "r", TableOptions{}), doctest::Contains("line 2"), Error);
}

TEST_CASE("paired timing: the time columns come from bench_norm_impl's lines, and a paragraph says what they mean") {
  TempDir tmp("table_paired");
  write_run(tmp.path / "layernorm", "layernorm", 100.0, 12.0);
  write_run(tmp.path / "rmsnorm", "rmsnorm", 80.0, 11.0);
  const std::string lines = tmp.write(
      "paired.jsonl",
      "== a header line the reader skips\n"
      R"({"model": "convpool", "impl": "fused", "norm": "layernorm", "threads": 1, "pairs": 20, "ms_per_step": 100.0, "ratio_vs_layernorm": 1.0, "ci95_low": 1.0, "ci95_high": 1.0})"
      "\n"
      R"({"model": "convpool", "impl": "fused", "norm": "rmsnorm", "threads": 1, "pairs": 20, "ms_per_step": 99.0, "ratio_vs_layernorm": 0.99, "ci95_low": 0.97, "ci95_high": 1.01})"
      "\n"
      R"({"model": "convpool", "impl": "composed", "norm": "rmsnorm", "threads": 1, "pairs": 20, "ms_per_step": 120.0, "ratio_vs_layernorm": 0.8, "ci95_low": 0.75, "ci95_high": 0.85, "composed_vs_fused": 1.2, "cf_ci95_low": 1.1, "cf_ci95_high": 1.3})"
      "\n");
  const PairedTimes paired = read_paired_timing(lines);
  CHECK(paired.rows.size() == 3);
  TableOptions options;
  options.metrics = {"error_pct"};
  options.paired = &paired;
  const std::string table = results_table(find_run_dirs({tmp.path.string()}), options);
  CHECK(table.find("ms per step (fused, paired)") != std::string::npos);
  CHECK(table.find("1.0% (-1.0 to 3.0)") != std::string::npos);  // fused RMSNorm: 1 − 0.99, interval 1 − [1.01, 0.97]
  CHECK(table.find("20.0% (15.0 to 25.0)") != std::string::npos);  // composed RMSNorm
  CHECK(table.find("s per 1k steps") == std::string::npos);        // the runs' own times are not shown
  const std::string text = paired_timing_explanation(paired);
  CHECK(text.find("RMSNorm's step is 20.0% faster than LayerNorm's (95% interval 15.0 to 25.0%)") != std::string::npos);
  CHECK(text.find("RMSNorm's step is as fast as LayerNorm's within the noise") != std::string::npos);
  CHECK(text.find("that is where the paper's speedups come from") != std::string::npos);

  const std::string two = tmp.write(
      "two.jsonl",
      R"({"model": "convpool", "impl": "fused", "norm": "layernorm", "ms_per_step": 100.0, "ratio_vs_layernorm": 1.0})"
      "\n"
      R"({"model": "reader", "impl": "fused", "norm": "layernorm", "ms_per_step": 50.0, "ratio_vs_layernorm": 1.0})"
      "\n");
  CHECK(test::error_of([&] { read_paired_timing(two); }) ==
        fmt::format("paired timing: {} times two models (convpool on line 1, reader on line 2); give one model's lines",
                    two));
  const std::string bad = tmp.write("bad.jsonl", "{\"impl\": \"fused\"}\n");
  CHECK(test::error_of([&] { read_paired_timing(bad); }) ==
        fmt::format("paired timing: {} line 1 is not a bench_norm_impl line", bad));
  CHECK(test::error_of([&] { read_paired_timing(tmp.file("missing.jsonl")); }) ==
        fmt::format("paired timing: cannot read {}: No such file or directory", tmp.file("missing.jsonl")));
}

TEST_CASE("several seeds of a norm make one row: mean ± sd, and the difference from LayerNorm paired by seed") {
  TempDir tmp("table_seeds");
  // Errors by seed: LayerNorm 10, 12, 14; RMSNorm 9, 12, 12 → differences −1, 0, −2.
  const double layernorm[] = {10, 12, 14}, rmsnorm[] = {9, 12, 12};
  for (int seed = 1; seed <= 3; ++seed) {
    for (const char* norm : {"layernorm", "rmsnorm"}) {
      const fs::path dir = tmp.path / fmt::format("{}-seed{}", norm, seed);
      write_run(dir, norm, 100.0, std::string(norm) == "layernorm" ? layernorm[seed - 1] : rmsnorm[seed - 1]);
      std::ofstream(dir / "config.json") << "{\"norm\": \"" << norm << "\", \"seed\": " << seed << "}\n";
    }
  }
  TableOptions options;
  options.metrics = {"error_pct"};
  const std::string table = results_table(find_run_dirs({tmp.path.string()}), options);
  CAPTURE(table);
  CHECK(table.find("valid error_pct (mean ± sd)") != std::string::npos);
  CHECK(table.find("| seeds |") != std::string::npos);
  CHECK(table.find("12.00 ± 2.00") != std::string::npos);  // LayerNorm: mean 12, sd 2
  CHECK(table.find("11.00 ± 1.73") != std::string::npos);  // RMSNorm: mean 11, sd √3
  // Mean difference −1, sd 1, t(0.975, 2) = 4.303: −1 ± 4.303/√3 = −1 ± 2.484.
  CHECK(table.find("-1.00 (-3.48 to +1.48)") != std::string::npos);

  CHECK(student_t_975(1) == doctest::Approx(12.706));
  CHECK(student_t_975(4) == doctest::Approx(2.776));
  const PairedDifference one = paired_difference({1.0}, {3.0});
  CHECK(one.mean == -2.0);
  CHECK(std::isnan(one.low));
  const MeanAndSpread s = mean_and_spread({1.0, std::nan(""), 3.0});
  CHECK(s.n == 2);
  CHECK(s.mean == 2.0);
}

TEST_CASE("--label and --reference: rows by another config key, numbers in order, paired against its reference") {
  TempDir tmp("table_shift");
  // RMSNorm under pre-activation shifts 0, 4 and 16 (labels sort by value, not
  // as text: 16 after 4); errors by seed: C = 0: 10, 12; C = 16: 13, 16 → +3, +4.
  const double errors[3][2] = {{10, 12}, {11, 12}, {13, 16}};
  const int shifts[] = {0, 4, 16};
  for (int c = 0; c < 3; ++c)
    for (int seed = 1; seed <= 2; ++seed) {
      const fs::path dir = tmp.path / fmt::format("c{}", shifts[c]) / fmt::format("rmsnorm-seed{}", seed);
      write_run(dir, "rmsnorm", 100.0, errors[c][seed - 1]);
      std::ofstream(dir / "config.json") << "{\"norm\": \"rmsnorm\", \"seed\": " << seed
                                         << ", \"preact-shift\": " << shifts[c] << ".0}\n";
    }
  TableOptions options;
  options.metrics = {"error_pct"};
  options.label_key = "preact-shift";
  options.reference = "0";
  options.decimals = 1;
  const std::string table = results_table(
      find_run_dirs({(tmp.path / "c16").string(), (tmp.path / "c0").string(), (tmp.path / "c4").string()}), options);
  CAPTURE(table);
  CHECK(table.find("| preact-shift | seeds |") == 0);
  CHECK(table.find("− preact-shift 0 (95% CI)") != std::string::npos);
  CHECK(table.find("speedup vs preact-shift 0") != std::string::npos);
  const size_t row0 = table.find("\n| 0 "), row4 = table.find("\n| 4 "), row16 = table.find("\n| 16 ");
  REQUIRE(row0 != std::string::npos);
  REQUIRE(row4 != std::string::npos);
  REQUIRE(row16 != std::string::npos);
  CHECK(row0 < row4);
  CHECK(row4 < row16);
  // C = 16 against C = 0: differences +3, +4: mean +3.5, sd 0.707, t(0.975, 1) = 12.706:
  // ±12.706 · 0.707 / √2 = ±6.35.
  CHECK(table.find("+3.5 (-2.9 to +9.9)") != std::string::npos);
}

TEST_CASE("--below: the step at which each run first fell under a target, its training time, and a legend") {
  TempDir tmp("table_below");
  // Validation errors by step: LayerNorm under 5 at step 30, RMSNorm at 20
  // (and above again later: the first step counts), pRMSNorm never.
  const auto write = [&](const std::string& norm, const std::vector<double>& errors) {
    const fs::path dir = tmp.path / norm;
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << "{\"norm\": \"" << norm << "\", \"seed\": 0}\n";
    std::ofstream m(dir / "metrics.jsonl");
    for (size_t i = 0; i < errors.size(); ++i) {
      const int step = 10 * static_cast<int>(i);
      if (step > 0)
        m << R"({"step": )" << step << R"(, "split": "train", "loss": 1.0, "time_sec": )" << step
          << R"(, "sec_per_1k_steps": 1000, "error_pct": 1.0})" << "\n";  // a train error under 5 does not count
      m << R"({"step": )" << step << R"(, "split": "valid", "loss": 1.0, "time_sec": )" << step + 0.5
        << R"(, "error_pct": )" << errors[i] << "}\n";
    }
  };
  write("layernorm", {90, 60, 20, 4.5});
  write("rmsnorm", {90, 30, 3, 6, 2});
  write("prmsnorm", {90, 60, 20, 8});
  TableOptions options;
  options.metrics = {"error_pct"};
  options.target = 5;
  std::string legend;
  const std::string table = results_table(find_run_dirs({tmp.path.string()}), options, &legend);
  CAPTURE(table);
  CHECK(table ==
        "| norm      | steps to valid error_pct < 5 | s to reach it | valid error_pct | s per 1k steps | speedup vs "
        "LayerNorm |\n"
        "|-----------|------------------------------|---------------|-----------------|----------------|------------"
        "----------|\n"
        "| layernorm |                           30 |            30 |            4.50 |         1000.0 |            "
        "        – |\n"
        "| rmsnorm   |                           20 |            20 |            2.00 |         1000.0 |            "
        "     0.0% |\n"
        "| prmsnorm  |                         > 30 |             – |            8.00 |         1000.0 |            "
        "     0.0% |\n");
  CHECK(legend.find("`steps to valid error_pct < 5` is the first evaluated step after 0 at which it was below 5") !=
        std::string::npos);
  CHECK(legend.find("the run's own clock") != std::string::npos);
  CHECK(std::count(legend.begin(), legend.end(), '\n') == 1);  // two lines

  // With paired timing the time to the target is the steps × the fused step's time.
  const std::string lines =
      tmp.write("paired.jsonl", fused_line("convpool", "layernorm", 800.0, 1.0, 1.0, 1.0) +
                                    fused_line("convpool", "rmsnorm", 750.0, 0.94, 0.9, 0.98));
  const PairedTimes paired = read_paired_timing(lines);
  options.paired = &paired;
  const std::string with_paired = results_table(find_run_dirs({tmp.path.string()}), options, &legend);
  CAPTURE(with_paired);
  CHECK(with_paired.find("| layernorm |                           30 |            24 |") != std::string::npos);
  CHECK(with_paired.find("| rmsnorm   |                           20 |            15 |") != std::string::npos);
  CHECK(legend.find("those steps × the fused step's paired time") != std::string::npos);

}

TEST_CASE("--above over seeds: how many reached the target, the steps and time to it, and the paired difference") {
  TempDir tmp("table_above_seeds");
  // Validation BLEU at steps 0, 100, 200, 300 (time_sec = step): the target is
  // BLEU above 30.
  const auto write = [&](const std::string& norm, int seed, const std::vector<double>& bleu) {
    write_seed_run(tmp.path, norm, seed, "bleu", bleu, 100);
  };
  write("layernorm", 1, {0, 20, 31, 35});  // step 200
  write("layernorm", 2, {0, 31, 33, 36});  // 100
  write("layernorm", 3, {0, 10, 25, 32});  // 300
  write("rmsnorm", 1, {0, 32, 34, 35});    // 100
  write("rmsnorm", 2, {0, 31, 35, 36});    // 100
  write("rmsnorm", 3, {0, 28, 31, 33});    // 200
  write("none", 1, {31, 1, 2, 3});         // never: step 0, before any training, does not count
  write("none", 2, {0, 1, 2, 30});         // never: 30 is not above 30
  write("none", 3, {0, 5, 10, 31});        // 300
  TableOptions options;
  options.metrics = {"bleu"};
  options.target = 30;
  options.higher_is_better = true;
  std::string legend;
  const std::string table = results_table(find_run_dirs({tmp.path.string()}), options, &legend);
  CAPTURE(table);
  CHECK(table.find("| reached valid bleu > 30 | steps to it (mean ± sd) | s to it (mean, 95% CI) | − LayerNorm s "
                   "(95% CI) |") != std::string::npos);
  // LayerNorm: 200, 100, 300 s: mean 200, sd 100, t(0.975, 2) = 4.303: ±4.303 · 100 / √3 = ±248.4.
  CHECK(table.find("| layernorm |     3 |                  3 of 3 |               200 ± 100 |       200 (-48 to 448) |"
                   "                      – |") != std::string::npos);
  // RMSNorm: 100, 100, 200: mean 133.3, sd 57.7, ±143.4; against LayerNorm −100, 0, −100: −66.7 ± 143.4.
  CHECK(table.find("| rmsnorm   |     3 |                  3 of 3 |                133 ± 58 |       133 (-10 to 277) |"
                   "      -67 (-210 to +77) |") != std::string::npos);
  // No normalization reached it with seed 3 only: no spread, and one pair.
  CHECK(table.find("| none      |     3 |                  1 of 3 |                     300 |                    300 |"
                   "                    0.0 |") != std::string::npos);
  CHECK(legend.find("`reached valid bleu > 30` counts the seeds") != std::string::npos);

  // With paired timing (LayerNorm 1 s a step; RMSNorm 0.9 of it, interval 0.8 to 1.0) the step time's
  // uncertainty joins the seeds': RMSNorm's seconds 90, 90, 180 at the median ratio, and each interval
  // the union of the seeds' intervals at 0.8 and at 1.0. To the target: 120, at 0.8 from −8.1 to 221.4,
  // at 1.0 from −10.1 to 276.8. Against LayerNorm: −80, at 0.8 from −253.0 to +66.4, at 1.0 from −210.1
  // to +76.8. The ms column is LayerNorm's step × the same ratio as the speedup's.
  const std::string lines =
      tmp.write("paired.jsonl", fused_line("rnnsearch", "layernorm", 1000.0, 1.0, 1.0, 1.0) +
                                    fused_line("rnnsearch", "rmsnorm", 870.0, 0.9, 0.8, 1.0));
  const PairedTimes paired = read_paired_timing(lines);
  options.paired = &paired;
  const std::string timed = results_table(find_run_dirs({tmp.path.string()}), options);
  CAPTURE(timed);
  CHECK(timed.find("|       120 (-10 to 277) |      -80 (-253 to +77) |") != std::string::npos);
  CHECK(timed.find("|                       900.0 |    10.0% (0.0 to 20.0) |") != std::string::npos);

  // The same norm and seed twice (a run copied, or two folders given) is an error, not a silent pick.
  fs::copy(tmp.path / "rmsnorm-seed2", tmp.path / "rmsnorm-seed2-again");
  CHECK(test::error_of([&] { results_table(find_run_dirs({tmp.path.string()}), options); })
            .find("are both norm rmsnorm with seed 2; a table takes one run per norm and seed") != std::string::npos);
}

TEST_CASE("time to the target when every seed passes at the same step: the step time's interval alone, in tenths") {
  // Order-embedding's case: both norms pass at step 80 in all three seeds, so the seeds add no spread,
  // and RMSNorm's paired ratio 0.99 (0.98 to 0.999) against LayerNorm's 1 s step makes its time
  // 80 · (0.98 − 1) = −1.6 to 80 · (0.999 − 1) = −0.08 s: an interval that excludes 0 and must not
  // print as reaching it. A ratio without an interval (NaN bounds) leaves the seeds' interval alone.
  TempDir tmp("table_same_step");
  for (const std::string norm : {"layernorm", "rmsnorm", "prmsnorm"})
    for (int seed = 1; seed <= 3; ++seed) write_seed_run(tmp.path, norm, seed, "r10", {5, 50}, 80);
  const double none = std::nan("");
  const std::string lines = tmp.write("paired.jsonl", fused_line("oe", "layernorm", 1000.0, 1.0, 1.0, 1.0) +
                                                          fused_line("oe", "rmsnorm", 990.0, 0.99, 0.98, 0.999) +
                                                          fused_line("oe", "prmsnorm", 990.0, 0.99, none, none));
  const PairedTimes paired = read_paired_timing(lines);
  TableOptions options;
  options.metrics = {"r10"};
  options.target = 40;
  options.higher_is_better = true;
  options.paired = &paired;
  const std::string table = results_table(find_run_dirs({tmp.path.string()}), options);
  CAPTURE(table);
  CHECK(table.find("|          80 (80 to 80) |                      – |") != std::string::npos);  // LayerNorm
  CHECK(table.find("|          79 (78 to 80) |    -0.8 (-1.6 to -0.1) |") != std::string::npos);  // RMSNorm
  CHECK(table.find("|          79 (79 to 79) |    -0.8 (-0.8 to -0.8) |") != std::string::npos);  // pRMSNorm
}
