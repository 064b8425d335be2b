#pragma once
// What every harness shares. libFuzzer calls LLVMFuzzerTestOneInput(data,
// size) millions of times; our readers take paths, so a harness writes the
// bytes to a file in a scratch directory private to the process and calls the
// very function a driver calls on its --data argument.
//
// The rule a harness enforces: a reader may refuse an input only by throwing
// rg::Error (a message naming the file and what is wrong). Anything else is a
// finding: a crash or an AddressSanitizer / UndefinedBehaviorSanitizer report,
// another exception type escaping (std::bad_alloc, std::out_of_range from a
// library, ...: libFuzzer reports it as an abort), a hang past -timeout, or an
// allocation past -malloc_limit_mb.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "rmsgrad/core/error.h"

namespace rg::fuzz {

// A directory of this process's own under $TMPDIR (or /tmp), created once,
// removed at exit.
const std::filesystem::path& scratch_dir();

// Writes the bytes to scratch_dir()/relative (creating parent folders) and
// returns the full path. Files one input leaves must not change the next
// one's result: a harness rewrites the same files for every input and removes
// any file the reader itself writes.
std::string write_input(const std::filesystem::path& relative, const uint8_t* data, size_t size);

// Runs the reader; rg::Error is an accepted refusal, everything else escapes.
template <class Read>
void expect_clean(Read&& read) {
  try {
    read();
  } catch (const rg::Error&) {
  }
}

}  // namespace rg::fuzz
