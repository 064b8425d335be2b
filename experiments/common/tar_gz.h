#pragma once
// Reading the regular files of a .tar.gz archive in memory, through zlib, so
// a dataset shipped as a tarball can be used without unpacking it first.
//
// The tar format (POSIX ustar): a sequence of 512-byte headers, each followed
// by the file's data padded to a multiple of 512 bytes; the archive ends with
// two zero blocks. A header holds the name (100 bytes, plus a 155-byte prefix
// in ustar), the size as octal text at offset 124, and the type flag at 156
// ('0' or '\0' for a regular file, '5' for a directory).
#include <functional>
#include <string>
#include <vector>

namespace rg {

// Calls visit(name, bytes) for every regular file, in archive order. Throws
// rg::Error naming the archive on a corrupt or truncated stream.
void for_each_tar_gz_file(const std::string& path,
                          const std::function<void(const std::string& name, std::vector<unsigned char>& bytes)>& visit);

}  // namespace rg
