#include "rmsgrad/core/polite_threads.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

// The arguments the program started with, from /proc/self/cmdline (NUL-
// separated), for re-executing it before main() has them.
std::vector<std::string> own_arguments() {
  std::vector<std::string> args;
  std::FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (f == nullptr) return args;
  std::string current;
  for (int c; (c = std::fgetc(f)) != EOF;) {
    if (c == '\0') {
      args.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(static_cast<char>(c));
    }
  }
  std::fclose(f);
  return args;
}

bool g_keep_requested_threads = false;

}  // namespace

void restart_with_polite_threads() {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  std::vector<std::string> args = own_arguments();
  if (args.empty()) return;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Set before the exec, so the new process sees it and does not come here again.
  if (setenv("GOMP_SPINCOUNT", kPoliteSpinCount, /*overwrite=*/1) != 0) return;
  // /proc/self/exe is this program's file even when argv[0] is a bare name
  // found on PATH; execv returns only when it fails.
  execv("/proc/self/exe", argv.data());
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

void keep_requested_threads(bool keep) {
  g_keep_requested_threads = keep;
  if (keep) use_threads(requested_threads());
}

int share_cores_with_other_processes() {
  static ThreadsForFreeCores rule;
  static std::chrono::steady_clock::time_point last_look;
  if (g_keep_requested_threads) return num_threads();
  if (requested_threads() == 1) return 1;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_look < std::chrono::duration<double>(kMinLookGapSeconds)) return num_threads();
  last_look = now;
  const std::optional<FreeCores> look = look_at_free_cores();
  if (!look) return num_threads();
  use_threads(rule.next(requested_threads(), num_threads(), look->free()));
  return num_threads();
}

}  // namespace rg
