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

#include "rmsgrad/experiments/common/run.h"
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string config = rg::fuzz::write_input("settings.toml", data, size);
  rg::fuzz::expect_clean([&] {
    DriverFlags flags;
    CLI::App app{"config fuzzer"};
    add_driver_flags(app, flags);
    const char* argv[] = {"driver", "--config", config.c_str()};
    std::ostringstream out, err;
    rg::parse_flags(app, 3, argv, out, err);
  });

  rg::fuzz::write_input("run/config.json", data, size);
  rg::fuzz::write_input("run/metrics.jsonl", data, size);
  const std::string run_dir = (rg::fuzz::scratch_dir() / "run").string();
  rg::fuzz::expect_clean([&] {
    DriverFlags flags;
    CLI::App app{"config fuzzer"};
    add_driver_flags(app, flags);
    const char* argv[] = {"driver", "--resume", "--out", run_dir.c_str()};
    std::ostringstream out, err;
    if (rg::parse_flags(app, 4, argv, out, err)) std::abort();  // these flags are valid
    rg::Run run(app, flags.run);
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
