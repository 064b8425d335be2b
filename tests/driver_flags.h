#pragma once
// A driver's flags for the scaffold's tests (test_flags, test_run): the run
// options plus three of its own, parsed as a driver parses them.
#include <CLI/CLI.hpp>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "rmsgrad/experiments/common/flags.h"

namespace rg::test {

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

}  // namespace rg::test
