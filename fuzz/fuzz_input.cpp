#include "fuzz/fuzz_input.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace rg::fuzz {

namespace fs = std::filesystem;

namespace {

// Removes the scratch directory when the process exits normally (libFuzzer
// calls exit() at the end of a -runs or -max_total_time run).
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    path = fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / ("rg-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

}  // namespace

const fs::path& scratch_dir() {
  static ScratchDir dir;
  return dir.path;
}

// Plain open/write/close: this runs for every input, millions of times, and
// std::ofstream plus create_directories cost a dozen system calls and
// allocations each time. Parent folders are made only when the open says they
// are missing (the first input). The file is
// truncated and rewritten in place, so hard links to it (see
// image_folder_fuzzer.cpp) see the new bytes.
std::string write_input(const fs::path& relative, const uint8_t* data, size_t size) {
  const fs::path path = scratch_dir() / relative;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT) {
    fs::create_directories(path.parent_path());
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  if (fd < 0) std::abort();  // the harness itself failed, not the reader
  for (size_t done = 0; done < size;) {
    const ssize_t wrote = ::write(fd, data + done, size - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) std::abort();
    done += static_cast<size_t>(wrote);
  }
  if (::close(fd) != 0) std::abort();
  return path.string();
}

}  // namespace rg::fuzz
