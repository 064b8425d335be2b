// For test_polite_threads: a program that links the library prints libgomp's
// own report of the settings it loaded with, its arguments, its process name,
// and how many times a static object of its own was built. With --restart
// as its first argument, main() first asks for the short spin
// (restart_with_polite_threads); without it, it asks for nothing.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"

namespace {
// Built before main(): once in a program that is not restarted, and once
// more in the restarted one.
struct BuiltBeforeMain {
  BuiltBeforeMain() {
    const char* spin = std::getenv("GOMP_SPINCOUNT");
    std::printf("static object built with GOMP_SPINCOUNT=%s\n", spin ? spin : "(unset)");
    std::fflush(stdout);
  }
} built_before_main;
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--restart") == 0) rg::restart_with_polite_threads(argv);
  std::printf("threads %d\n", rg::num_threads());  // uses the library
  char name[64] = {};
  if (std::FILE* comm = std::fopen("/proc/self/comm", "r")) {
    if (std::fgets(name, sizeof name, comm) == nullptr) name[0] = '\0';
    std::fclose(comm);
  }
  std::printf("process name %s", name);  // comm ends in a newline
  std::fflush(stdout);
  omp_display_env(/*verbose=*/1);  // to stderr: GOMP_SPINCOUNT = '...'
  for (int i = 1; i < argc; ++i) std::printf("arg %s\n", argv[i]);
  return 0;
}
