#include "rmsgrad/experiments/common/text_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/file_status.h"

namespace rg {

size_t invalid_utf8_offset(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    const uint32_t min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string::npos;
}

namespace {
constexpr size_t kLongestLine = size_t{1} << 20;  // 1 MiB: a sentence, a story line or a book line is far shorter
}  // namespace

std::vector<std::string> read_lines(const std::string& path) {
  check(path_exists(path), "{}: no such file", path);
  check(!is_folder(path), "{}: is a directory, not a text file", path);
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  check(file != nullptr, "{}: cannot open: {}", path, std::strerror(errno));
  std::vector<std::string> lines;
  std::string current;
  char buffer[1 << 16];
  for (;;) {
    const int got = gzread(file.get(), buffer, sizeof(buffer));
    if (got < 0) {
      int code = 0;
      throw Error(fmt::format("{}: corrupt gzip data: {}", path, gzerror(file.get(), &code)));
    }
    if (got == 0) break;
    // Whole runs up to each newline at once: a push_back per byte was
    // most of the time of reading a text file (seen profiling the cbt fuzzer).
    for (const char *at = buffer, *end = buffer + got; at < end;) {
      const char* newline = static_cast<const char*>(std::memchr(at, '\n', static_cast<size_t>(end - at)));
      current.append(at, newline != nullptr ? newline : end);
      check(current.size() <= kLongestLine, "{}:{}: a line longer than {} bytes; this is not a text file of "
            "sentences", path, lines.size() + 1, kLongestLine);
      if (newline == nullptr) break;
      lines.push_back(std::move(current));
      current.clear();
      at = newline + 1;
    }
  }
  if (!current.empty()) lines.push_back(std::move(current));
  // A UTF-8 byte-order mark (editors on Windows write one) is not text.
  if (!lines.empty() && lines[0].rfind("\xEF\xBB\xBF", 0) == 0) lines[0].erase(0, 3);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string& line = lines[i];
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t bad = invalid_utf8_offset(line);
    check(bad == std::string::npos, "{}:{}: invalid UTF-8 at byte {} of the line", path, i + 1, bad + 1);
  }
  return lines;
}

std::pair<std::vector<std::string>, std::vector<std::string>> read_parallel(const std::string& source,
                                                                            const std::string& target) {
  auto src = read_lines(source);
  auto tgt = read_lines(target);
  check(src.size() == tgt.size(), "{} has {} lines but {} has {}: a parallel corpus must align line by line", source,
        src.size(), target, tgt.size());
  return {std::move(src), std::move(tgt)};
}

}  // namespace rg
