#include "rmsgrad/core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "rmsgrad/core/error.h"

namespace rg {

namespace fs = std::filesystem;

namespace {

std::string folder_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

// What a name holds when it is neither a regular file nor a link ("" when it is one of those, or nothing).
std::string not_a_file(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return {};
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "a device";
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  check(!path_.empty(), "cannot write a file with an empty name");
  const std::string what = not_a_file(path_);
  check(what.empty(), "cannot write '{}': it is {}, not a regular file; move it away or choose another name", path_,
        what);
  temporary_ = (fs::path(folder_of(path_)) / ("." + fs::path(path_).filename().string() + ".tmp")).string();
  const std::string in_the_way = not_a_file(temporary_);
  check(in_the_way.empty(), "cannot write '{}': its temporary '{}' is {}; remove it", path_, temporary_, in_the_way);
  ::unlink(temporary_.c_str());  // a leftover or a planted link: the name, never its target
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  check(fd_ >= 0, "cannot write '{}': cannot create '{}': {}", path_, temporary_, std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temporary_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t bytes) {
  check(fd_ >= 0, "AtomicFile '{}': written after commit", path_);
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    check(n > 0, "cannot write '{}': {}", path_, std::strerror(errno));
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  check(fd_ >= 0, "AtomicFile '{}': committed twice", path_);
  check(::fsync(fd_) == 0, "cannot write '{}': {}", path_, std::strerror(errno));
  // Some file systems report a failed write only at close.
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 || ::rename(temporary_.c_str(), path_.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary_.c_str());
    throw Error(fmt::format("cannot write '{}': {}", path_, reason));
  }
  const int folder = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder >= 0) {
    ::fsync(folder);
    ::close(folder);
  }
}

void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

}  // namespace rg
