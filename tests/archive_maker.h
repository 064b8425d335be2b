#pragma once
// Archives made in memory by libarchive's writer, for the reader tests: the
// same library writes them as reads them, in each format the readers accept.
#include <archive.h>
#include <archive_entry.h>
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

namespace rg::test {

using Members = std::vector<std::pair<std::string, std::string>>;  // (path inside, bytes)

// kind: "tar", "tar.gz", "tar.xz" or "zip".
inline std::string make_archive(const std::string& kind, const Members& members) {
  struct archive* writer = archive_write_new();
  if (kind == "zip") {
    archive_write_set_format_zip(writer);
  } else {
    archive_write_set_format_ustar(writer);
    if (kind == "tar.gz") archive_write_add_filter_gzip(writer);
    if (kind == "tar.xz") archive_write_add_filter_xz(writer);
  }
  std::vector<char> buffer(4 << 20);
  size_t used = 0;
  REQUIRE(archive_write_open_memory(writer, buffer.data(), buffer.size(), &used) == ARCHIVE_OK);
  for (const auto& [name, bytes] : members) {
    struct archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, name.c_str());
    archive_entry_set_size(entry, static_cast<la_int64_t>(bytes.size()));
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    REQUIRE(archive_write_header(writer, entry) == ARCHIVE_OK);
    REQUIRE(archive_write_data(writer, bytes.data(), bytes.size()) == static_cast<la_ssize_t>(bytes.size()));
    archive_entry_free(entry);
  }
  REQUIRE(archive_write_close(writer) == ARCHIVE_OK);
  archive_write_free(writer);
  return std::string(buffer.data(), used);
}

}  // namespace rg::test
