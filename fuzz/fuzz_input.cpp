#include "fuzz/fuzz_input.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

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

std::string write_input(const fs::path& relative, const uint8_t* data, size_t size) {
  const fs::path path = scratch_dir() / relative;
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) std::abort();  // the harness itself failed, not the reader
  return path.string();
}

void clear_scratch() {
  for (const fs::directory_entry& entry : fs::directory_iterator(scratch_dir())) fs::remove_all(entry.path());
}

}  // namespace rg::fuzz
