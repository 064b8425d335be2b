#pragma once
// Writing a file whole, and never through a link.
//
// Every file the library and the programs write in full (a checkpoint,
// config.json, a sample, a tokenizer model) goes through an AtomicFile:
//
//   1. the bytes go to a temporary file beside the target, ".<name>.tmp",
//      created with O_CREAT | O_EXCL | O_NOFOLLOW after anything left at
//      that name (a crashed run's file, a planted symbolic link) is removed —
//      unlink removes a link, never what it points to;
//   2. commit() fsyncs it and renames it over the target. rename replaces a
//      link at the target by the file; it does not write through it. Then
//      the folder is fsynced, so that the rename itself survives a crash.
//
// So a crash, a full disk or a file-size limit leaves the old file or the
// new one, never half of either; and a link at the target's name or at the
// temporary's never has its own target written. A target that exists and is
// neither a regular file nor a link (a FIFO, a device, a folder) is refused
// before anything is written: opening a FIFO would block. Every failure is
// an rg::Error naming the target and the cause; an AtomicFile destroyed
// without commit() removes its temporary.
#include <cstddef>
#include <string>
#include <string_view>

namespace rg {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void commit();

 private:
  std::string path_, temporary_;
  int fd_ = -1;
};

// The whole file at once: path holds `text` afterwards, or is as it was.
void write_file_atomically(const std::string& path, std::string_view text);

}  // namespace rg
