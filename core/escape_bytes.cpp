#include "rmsgrad/core/escape_bytes.h"

#include <cstddef>
#include <cstdint>

namespace rg {

namespace {

// The length of the well-formed UTF-8 sequence that starts text[at], or 0.
// The table of Unicode 15, section 3.9 (D92), which JSON libraries check too:
// the second byte's range depends on the first, which rules out overlong
// forms, the surrogates D800-DFFF and everything above 10FFFF.
size_t well_formed_length(std::string_view text, size_t at) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[at + i]); };
  const uint8_t first = byte(0);
  if (first < 0x80) return 1;
  size_t length = 0;
  uint8_t low = 0x80, high = 0xBF;  // the second byte's range
  if (first >= 0xC2 && first <= 0xDF) {
    length = 2;
  } else if (first >= 0xE0 && first <= 0xEF) {
    length = 3;
    if (first == 0xE0) low = 0xA0;   // overlong below
    if (first == 0xED) high = 0x9F;  // surrogates above
  } else if (first >= 0xF0 && first <= 0xF4) {
    length = 4;
    if (first == 0xF0) low = 0x90;   // overlong below
    if (first == 0xF4) high = 0x8F;  // above 10FFFF
  } else {
    return 0;  // a continuation byte, C0, C1, F5-FF
  }
  if (text.size() - at < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return length;
}

void append_escaped(std::string& out, uint8_t byte) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xF];
}

std::string escaped(std::string_view bytes, bool controls) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t at = 0; at < bytes.size();) {
    const size_t length = well_formed_length(bytes, at);
    const auto byte = static_cast<uint8_t>(bytes[at]);
    if (length == 0 || (controls && (byte < 0x20 || byte == 0x7F))) {
      append_escaped(out, byte);
      ++at;  // the next byte may begin a well-formed sequence
    } else {
      out.append(bytes, at, length);
      at += length;
    }
  }
  return out;
}

}  // namespace

std::string escape_bytes(std::string_view bytes) { return escaped(bytes, /*controls=*/false); }
std::string one_line_escaped(std::string_view bytes) { return escaped(bytes, /*controls=*/true); }

}  // namespace rg
