#pragma once
// Command lines of the benchmark programs: CLI11 flags, parsed with one
// clear error line for a bad flag.
#include <CLI/CLI.hpp>

#include <cstdio>

namespace rg::bench {

// Parses argv; returns the exit code when the program should stop (help, or
// a bad flag: one "error:" line and 2).
inline int parse_bench_flags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      std::printf("%s", app.help().c_str());
      return 0;
    }
    std::fprintf(stderr, "error: %s; see %s --help\n", e.what(), app.get_name().c_str());
    return 2;
  }
  return -1;
}

}  // namespace rg::bench
