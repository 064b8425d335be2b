// The run's settings files, both ways a driver reads them:
//   --config FILE   a TOML / INI file of flag values, parsed by parse_flags
//                   (CLI11's config reader) into a driver-like set of flags;
//   --resume        <out>/config.json (the saved settings, compared with the
//                   new ones) and <out>/metrics.jsonl (cut back to the
//                   checkpoint's step), read by Run and Run::begin_training.
// The same input is used as each of the three files.
#include <sstream>
#include <string>
#include <vector>

#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/train/run.h"
#include "fuzz/fuzz_input.h"

namespace {

// The kinds of flag the drivers have: numbers with ranges, a choice, a list,
// a switch, a path.
struct DriverFlags {
  rg::RunOptions run;
  double lr = 0.003;
  int64_t steps = 10;
  std::string norm = "rmsnorm", data;
  std::vector<int64_t> sizes = {1, 2};
  bool verbose = false;
};

void add_driver_flags(CLI::App& app, DriverFlags& flags) {
  rg::add_run_options(app, flags.run);
  app.add_option("--lr", flags.lr, "learning rate")->check(CLI::PositiveNumber);
  app.add_option("--steps", flags.steps, "steps")->check(CLI::Range(1, 1000));
  app.add_option("--norm", flags.norm, "norm")->check(CLI::IsMember({"layernorm", "rmsnorm"}));
  app.add_option("--sizes", flags.sizes, "sizes");
  app.add_option("--data", flags.data, "data");
  app.add_flag("--verbose", flags.verbose, "verbose");
}

}  // namespace

// The flag sets are built once, not for every input: adding a dozen options
// to a CLI11 app (names split and checked against the others', validators and
// std::functions made) was about 40% of the time of each call (perf),
// and none of it depends on the input. Each input still goes through the
// calls a driver makes: parse_flags on its --config file, Run and
// begin_training on its run directory.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string config = rg::fuzz::write_input("settings.toml", data, size);
  rg::fuzz::expect_clean([&] {
    static DriverFlags flags;
    static CLI::App app{"config fuzzer"};
    static const bool added = (add_driver_flags(app, flags), true);
    (void)added;
    // App::parse clears the previous parse's results; the values bound to
    // the options go back to their defaults here, so that every input meets
    // the app as a driver starts with it. (Checked against a fresh app per
    // input on the corpus and 180,000 fuzzed inputs: the same exit code,
    // message, results and values every time.)
    flags = DriverFlags{};
    const char* argv[] = {"driver", "--config", config.c_str()};
    std::ostringstream out, err;
    rg::parse_flags(app, 3, argv, out, err);
  });

  rg::fuzz::write_input("run/config.json", data, size);
  rg::fuzz::write_input("run/metrics.jsonl", data, size);
  // A resume's command line is the same for every input, so it is parsed
  // once; the input is in the two files Run reads.
  static DriverFlags resume_flags;
  static CLI::App resume_app{"config fuzzer"};
  static const bool parsed = [] {
    add_driver_flags(resume_app, resume_flags);
    const std::string run_dir = (rg::fuzz::scratch_dir() / "run").string();
    const char* argv[] = {"driver", "--resume", "--out", run_dir.c_str()};
    std::ostringstream out, err;
    if (rg::parse_flags(resume_app, 4, argv, out, err)) std::abort();  // these flags are valid
    return true;
  }();
  (void)parsed;
  rg::fuzz::expect_clean([&] {
    rg::Run run(resume_flags.run, rg::run_settings(resume_app));
    run.begin_training(3);
  });
  // Of what Run writes, only train.log would carry over into the next input
  // (a resumed run appends to it); config.json and metrics.jsonl are
  // rewritten by the harness above. Removing that one file costs a system
  // call, where emptying the whole scratch folder cost a dozen.
  std::error_code ignored;
  std::filesystem::remove(rg::fuzz::scratch_dir() / "run" / "train.log", ignored);
  return 0;
}
