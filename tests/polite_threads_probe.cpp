// For test_polite_threads: a program that links the library and calls
// nothing about threads prints libgomp's own report of the settings it
// loaded with, its arguments, and whether a static object of its own was
// built once (in the process that runs main) or before a re-execution too.
#include <omp.h>

#include <cstdio>
#include <cstdlib>

#include "rmsgrad/core/parallel.h"

namespace {
// Built before main(): the library's re-execution must come first, so this
// runs in one process only, and sees the spin count already set.
struct BuiltBeforeMain {
  BuiltBeforeMain() {
    const char* spin = std::getenv("GOMP_SPINCOUNT");
    std::printf("static object built with GOMP_SPINCOUNT=%s\n", spin ? spin : "(unset)");
  }
} built_before_main;
}  // namespace

int main(int argc, char** argv) {
  std::printf("threads %d\n", rg::num_threads());  // uses the library
  std::fflush(stdout);
  omp_display_env(/*verbose=*/1);  // to stderr: GOMP_SPINCOUNT = '...'
  for (int i = 1; i < argc; ++i) std::printf("arg %s\n", argv[i]);
  return 0;
}
