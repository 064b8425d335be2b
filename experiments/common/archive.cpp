// Archives through libarchive (see archive.h). The reading loop is the one
// libarchive documents: open with every format and filter enabled, then
// archive_read_next_header / archive_read_data until ARCHIVE_EOF. Every
// return code is checked; ARCHIVE_WARN (e.g. an unknown extended attribute)
// is not an error, ARCHIVE_FAILED and ARCHIVE_FATAL are.
#include "rmsgrad/experiments/common/archive.h"

#include <archive.h>
#include <archive_entry.h>

#include <memory>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

using ArchivePtr = std::unique_ptr<struct archive, int (*)(struct archive*)>;

ArchivePtr new_reader() {
  ArchivePtr reader(archive_read_new(), archive_read_free);
  check(reader != nullptr, "archive: libarchive could not allocate a reader");
  archive_read_support_filter_all(reader.get());
  archive_read_support_format_all(reader.get());
  return reader;
}

std::string reason(struct archive* reader) {
  const char* text = archive_error_string(reader);
  return text != nullptr ? text : "unknown error";
}

void walk(struct archive* reader, const std::string& label,
          const std::function<void(const std::string&, std::vector<unsigned char>&)>& visit, uint64_t max_file_bytes,
          const std::function<bool(const std::string&)>& wanted) {
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  for (;;) {
    struct archive_entry* entry = nullptr;
    const int status = archive_read_next_header(reader, &entry);
    if (status == ARCHIVE_EOF) return;
    check(status >= ARCHIVE_WARN, "{}: cannot read the archive: {}", label, reason(reader));
    const char* raw_name = archive_entry_pathname(entry);
    std::string name = raw_name != nullptr ? raw_name : "";
    while (name.rfind("./", 0) == 0) name.erase(0, 2);  // `tar -C dir -czf x.tar.gz .` names ./train/...
    if (archive_entry_filetype(entry) != AE_IFREG) continue;  // directories, links, devices
    if (wanted && !wanted(name)) {
      check(archive_read_data_skip(reader) >= ARCHIVE_WARN, "{}: cannot read past '{}' in the archive: {}", label,
            name, reason(reader));
      continue;
    }
    bytes.clear();
    for (;;) {
      const la_ssize_t got = archive_read_data(reader, chunk, sizeof(chunk));
      check(got >= 0, "{}: cannot read '{}' in the archive: {}", label, name, reason(reader));
      if (got == 0) break;
      check(bytes.size() + static_cast<uint64_t>(got) <= max_file_bytes,
            "{}: '{}' in the archive is larger than {} bytes, the most this reader accepts", label, name,
            max_file_bytes);
      bytes.insert(bytes.end(), chunk, chunk + got);
    }
    visit(name, bytes);
  }
}

}  // namespace

void for_each_archive_file(const std::string& path,
                           const std::function<void(const std::string&, std::vector<unsigned char>&)>& visit,
                           uint64_t max_file_bytes, const std::function<bool(const std::string&)>& wanted) {
  ArchivePtr reader = new_reader();
  // Opening reads the first block to tell the format; the reason is only set after.
  const int opened = archive_read_open_filename(reader.get(), path.c_str(), 1 << 18);
  check(opened == ARCHIVE_OK, "{}: cannot read the archive: {}", path, reason(reader.get()));
  walk(reader.get(), path, visit, max_file_bytes, wanted);
}

void for_each_archive_file_in_memory(const void* data, size_t size, const std::string& label,
                                     const std::function<void(const std::string&, std::vector<unsigned char>&)>& visit,
                                     uint64_t max_file_bytes, const std::function<bool(const std::string&)>& wanted) {
  ArchivePtr reader = new_reader();
  const int opened = archive_read_open_memory(reader.get(), data, size);
  check(opened == ARCHIVE_OK, "{}: cannot read the archive: {}", label, reason(reader.get()));
  walk(reader.get(), label, visit, max_file_bytes, wanted);
}

}  // namespace rg
