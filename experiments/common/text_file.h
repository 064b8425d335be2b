#pragma once
// Text corpora: one sentence per line, plain or gzip-compressed (zlib reads
// both transparently). Every line must be valid UTF-8 and at most 1 MiB long;
// the error names the file and the 1-based line number. A UTF-8 byte-order
// mark at the start is skipped.
#include <string>
#include <vector>

namespace rg {

std::vector<std::string> read_lines(const std::string& path);

// Reads two files that must align line by line (a parallel corpus, or a
// hypothesis and its reference); different line counts are an error naming
// both files and both counts.
std::pair<std::vector<std::string>, std::vector<std::string>> read_parallel(const std::string& source,
                                                                            const std::string& target);

// Offset of the first invalid UTF-8 byte, or npos when the text is valid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t invalid_utf8_offset(const std::string& text);

}  // namespace rg
