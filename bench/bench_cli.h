#pragma once
// Command lines of the benchmark programs: CLI11 flags, parsed with one
// clear error line for a bad flag.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "rmsgrad/core/escape_bytes.h"
#include "rmsgrad/core/parallel.h"

namespace rg::bench {

// Parses argv; returns the exit code when the program should stop (help, or
// a bad flag: one "error:" line and 2; a bad OMP_NUM_THREADS, core/parallel.h:
// one "error:" line and 1), or -1 to go on.
inline int parse_bench_flags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      std::printf("%s", app.help().c_str());
      return 0;
    }
    const std::string what = fmt::format("error: {}; see {} --help", e.what(), app.get_name());
    std::fprintf(stderr, "%s\n", one_line_escaped(what).c_str());
    return 2;
  }
  if (const std::string problem = omp_num_threads_problem(); !problem.empty()) {
    std::fprintf(stderr, "error: %s\n", one_line_escaped(problem).c_str());
    return 1;
  }
  return -1;
}

}  // namespace rg::bench
