// For test_polite_threads: restarts itself as a driver does, then prints
// libgomp's own report of the settings it loaded with, and its arguments.
#include <omp.h>

#include <cstdio>

#include "rmsgrad/core/polite_threads.h"

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);
  omp_display_env(/*verbose=*/1);  // to stderr: GOMP_SPINCOUNT = '...'
  for (int i = 1; i < argc; ++i) std::printf("arg %s\n", argv[i]);
  return 0;
}
