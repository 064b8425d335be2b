// paper_table RUN_DIR...: the paper-style results table over sibling runs
// (quality metric per split, time per unit, speedup against LayerNorm; with
// --below or --above, the steps and training time each run took to pass a
// target, over seeds with their intervals),
// then a line or two on what the columns mean; see
// experiments/common/results_table.h.
//
//   build/bin/paper_table runs/cifar10 --metric error_pct --split valid,test --time epoch
//   build/bin/paper_table runs/quickstart --metric error_pct --below 5 --paired runs/quickstart/paired.jsonl
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/common/results_table.h"
#include "rmsgrad/train/run.h"

int main(int argc, char** argv) {
  return rg::report_errors([&]() -> int {
    std::vector<std::string> paths;
    rg::TableOptions options;
    rg::TimeUnit unit = rg::TimeUnit::Per1k;
    CLI::App app{"The paper-style results table over run directories"};
    app.add_option("runs", paths, "run directories, or folders of sibling runs")->required();
    app.add_option("--metric", options.metrics, "the quality metric(s) of the eval lines, comma-separated")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--split", options.splits, "splits to show, comma-separated")->delimiter(',')->capture_default_str();
    const std::map<std::string, rg::TimeUnit> units = {
        {"1k", rg::TimeUnit::Per1k}, {"0.1k", rg::TimeUnit::Per100}, {"epoch", rg::TimeUnit::PerEpoch}};
    app.add_option("--time", unit, "time unit: 1k, 0.1k (steps) or epoch")
        ->transform(CLI::CheckedTransformer(units, CLI::ignore_case))
        ->capture_default_str();
    app.add_option("--decimals", options.decimals, "decimals of the metric")->capture_default_str();
    app.add_option("--label", options.label_key, "the config.json key whose value labels a run")->capture_default_str();
    app.add_option("--reference", options.reference, "the label the other rows are compared with")
        ->capture_default_str();
    double below = std::numeric_limits<double>::quiet_NaN(), above = below;
    auto* below_flag = app.add_option("--below", below,
                                      "a target for the first metric on the first split, where lower is better "
                                      "(an error): adds the step at which each run first fell below it (counted from "
                                      "the first evaluation after step 0: the initial weights do not reach a target) "
                                      "and the training time to that step");
    app.add_option("--above", above,
                   "the same for a metric where higher is better (BLEU, recall, accuracy): the first step above it")
        ->excludes(below_flag);
    std::string paired_path;
    app.add_option("--paired", paired_path,
                   "bench_norm_impl's JSON lines: the time columns from paired timing instead of the runs' logs");
    if (auto exit_code = rg::parse_flags(app, argc, argv)) return *exit_code;
    options.time = unit;
    options.target = std::isnan(above) ? below : above;
    options.higher_is_better = !std::isnan(above);
    rg::PairedTimes paired;
    if (!paired_path.empty()) {
      paired = rg::read_paired_timing(paired_path);
      options.paired = &paired;
    }
    std::string legend;
    std::fputs(rg::results_table(rg::find_run_dirs(paths), options, &legend).c_str(), stdout);
    // Without paired timing the legend follows the "(Time from" line, which
    // scripts/shift_experiment.sh cuts off with everything after it.
    if (options.paired != nullptr) {
      std::printf("\n%s\n", legend.c_str());
      std::printf("\n%s\n", rg::paired_timing_explanation(paired).c_str());
    } else {
      std::puts("\n(Time from the runs' own logs, one run after another: differences below ~5% are the machine's "
                "drift, not a measurement; bench/norm_impl_table.sh times the steps in pairs.)");
      std::printf("%s\n", legend.c_str());
    }
    return 0;
  });
}
