#include "rmsgrad/core/polite_threads.h"

#include <unistd.h>

#include <cstdlib>

namespace rg {

void restart_with_polite_threads(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (argv == nullptr || argv[0] == nullptr) return;
  // Set before the exec, so the new process sees it and does not come here again.
  if (setenv("GOMP_SPINCOUNT", kPoliteSpinCount, /*overwrite=*/1) != 0) return;
  // /proc/self/exe is this program's file even when argv[0] is a bare name
  // found on PATH; execv returns only when it fails.
  execv("/proc/self/exe", argv);
  execvp(argv[0], argv);
}

}  // namespace rg
