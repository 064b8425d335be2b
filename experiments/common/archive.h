#pragma once
// Reading the regular files of an archive in memory, so a dataset shipped as
// a tarball or a zip can be used without unpacking it first.
//
// The formats and compressions are libarchive's (Debian's libarchive-dev), a
// well-kept reader fuzzed by its own project: .tar, .tar.gz, .tar.xz,
// .tar.bz2, .tar.zst, .zip, .7z, cpio and more, told apart by their bytes, not
// by the file name. We only walk the entries and copy each regular file's
// bytes out; directories, links and devices are skipped.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rg {

// Calls visit(name, bytes) for every regular file, in archive order, whose
// name `wanted` accepts (every file when it is empty); the others are skipped
// unread, whatever their size. Names lose a leading "./" (an archive made with
// `tar -C dir -czf x.tar.gz .`). A wanted file larger than `max_file_bytes` is
// an error naming it (the limit keeps a corrupt or hostile header from making
// us allocate what the data cannot justify: bytes are appended as they are
// decompressed, never reserved from the size a header claims). Throws
// rg::Error naming the archive on anything libarchive cannot read: an unknown
// format, a corrupt or truncated stream.
void for_each_archive_file(const std::string& path,
                           const std::function<void(const std::string& name, std::vector<unsigned char>& bytes)>& visit,
                           uint64_t max_file_bytes = uint64_t{1} << 30,
                           const std::function<bool(const std::string& name)>& wanted = {});

// The same over an archive already in memory (the fuzz harness feeds bytes
// here); `label` names it in messages.
void for_each_archive_file_in_memory(
    const void* data, size_t size, const std::string& label,
    const std::function<void(const std::string& name, std::vector<unsigned char>& bytes)>& visit,
    uint64_t max_file_bytes = uint64_t{1} << 30, const std::function<bool(const std::string& name)>& wanted = {});

}  // namespace rg
