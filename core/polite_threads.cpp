#include "rmsgrad/core/polite_threads.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/core/parallel.h"

namespace rg {

void restart_with_polite_threads(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (argv == nullptr || argv[0] == nullptr) return;
  // The program will refuse this OMP_NUM_THREADS (Run checks it); starting
  // again would only print libgomp's warning about it a second time.
  if (!omp_num_threads_problem().empty()) return;
  // The program's own file, by its real path: executed through the
  // /proc/self/exe link the process would be named "exe" (ps, pgrep).
  char file[PATH_MAX + 1];
  const ssize_t n = readlink("/proc/self/exe", file, PATH_MAX);
  if (n <= 0) return;
  file[n] = '\0';
  // Set before the exec, so the new process sees it and does not come here again.
  if (setenv("GOMP_SPINCOUNT", kPoliteSpinCount, /*overwrite=*/1) != 0) return;
  execv(file, argv);  // returns only when it fails
  unsetenv("GOMP_SPINCOUNT");
}

namespace {

// "procs_running N" of /proc/stat: tasks runnable now, this process's included.
std::optional<int> procs_running() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return std::nullopt;
  std::optional<int> running;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    int n = 0;
    if (std::sscanf(line, "procs_running %d", &n) == 1) {
      running = n;
      break;
    }
  }
  std::fclose(f);
  return running;
}

// This process's threads in state R. A thread's stat line is
// "tid (name) S ...": the state follows the last ')', as the name may hold any.
int own_running_threads() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return 1;  // at least the caller
  int running = 0;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + entry->d_name + "/stat";
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) continue;  // the thread has ended
    char text[512];
    const size_t n = std::fread(text, 1, sizeof text - 1, f);
    std::fclose(f);
    text[n] = '\0';
    const char* close = std::strrchr(text, ')');
    if (close != nullptr && close[1] == ' ' && close[2] == 'R') ++running;
  }
  closedir(tasks);
  return std::max(running, 1);  // the caller is running, whatever the snapshot says
}

int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

}  // namespace

std::optional<FreeCores> look_at_free_cores() {
  const std::optional<int> running = procs_running();
  if (!running) return std::nullopt;
  return FreeCores{usable_cores(), std::max(0, *running - own_running_threads())};
}

int ThreadsForFreeCores::next(int requested, int current, int free) {
  const int wanted = std::clamp(free, 1, std::max(requested, 1));
  if (wanted == current) {
    pending_ = 0;
    return current;
  }
  // A change needs two looks in a row asking for it: one look is a snapshot,
  // and a task that was runnable for a moment must not halve the threads.
  if (pending_ == wanted) {
    pending_ = 0;
    return wanted;
  }
  pending_ = wanted;
  return current;
}

int FreeCoreFollower::follow() {
  if (requested_threads() == 1) return 1;
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (last_look_ >= 0 && now - last_look_ < kMinLookGapSeconds) return num_threads();
  last_look_ = now;
  const std::optional<FreeCores> look = look_at_free_cores();
  if (!look) return num_threads();
  use_threads(rule_.next(requested_threads(), num_threads(), look->free()));
  return num_threads();
}

}  // namespace rg
