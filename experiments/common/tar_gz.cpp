#include "experiments/common/tar_gz.h"

#include <zlib.h>

#include <cstring>
#include <memory>

#include "core/error.h"

namespace rg {

namespace {

// Reads exactly n bytes; false at a clean end of stream before any byte.
bool read_exact(gzFile file, unsigned char* out, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    int r = gzread(file, out + got, static_cast<unsigned>(n - got));
    if (r < 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      throw Error(fmt::format("{}: corrupt gzip stream: {}", path, message));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  check(got == 0 || got == n, "{}: truncated archive ({} of {} bytes of a block)", path, got, n);
  return got == n;
}

uint64_t parse_octal(const unsigned char* field, size_t len, const std::string& path) {
  uint64_t value = 0;
  for (size_t i = 0; i < len && field[i] != 0 && field[i] != ' '; ++i) {
    check(field[i] >= '0' && field[i] <= '7', "{}: corrupt tar header (size field is not octal)", path);
    value = value * 8 + (field[i] - '0');
  }
  return value;
}

}  // namespace

void for_each_tar_gz_file(const std::string& path,
                          const std::function<void(const std::string&, std::vector<unsigned char>&)>& visit) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  check(file != nullptr, "{}: cannot open the archive", path);
  gzbuffer(file.get(), 1 << 18);
  unsigned char header[512];
  std::vector<unsigned char> bytes;
  while (read_exact(file.get(), header, 512, path)) {
    bool zero = true;
    for (unsigned char b : header) zero = zero && b == 0;
    if (zero) return;  // end-of-archive marker
    // The checksum: the header's bytes summed with the checksum field as spaces.
    uint64_t sum = 0;
    for (int i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : header[i];
    check(sum == parse_octal(header + 148, 8, path), "{}: corrupt tar header (checksum mismatch)", path);
    const uint64_t size = parse_octal(header + 124, 12, path);
    std::string name(reinterpret_cast<const char*>(header), strnlen(reinterpret_cast<const char*>(header), 100));
    if (std::memcmp(header + 257, "ustar", 5) == 0 && header[345] != 0)
      name = std::string(reinterpret_cast<const char*>(header + 345),
                         strnlen(reinterpret_cast<const char*>(header + 345), 155)) + "/" + name;
    const char type = static_cast<char>(header[156]);
    const uint64_t padded = (size + 511) / 512 * 512;
    bytes.resize(padded);
    if (padded > 0)
      check(read_exact(file.get(), bytes.data(), padded, path), "{}: truncated archive inside '{}'", path, name);
    if (type == '0' || type == '\0') {
      bytes.resize(size);
      visit(name, bytes);
    }
  }
  throw Error(fmt::format("{}: truncated archive (no end-of-archive marker)", path));
}

}  // namespace rg
