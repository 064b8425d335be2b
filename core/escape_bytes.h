#pragma once
// Bytes shown as text.
//
// A Linux path is bytes, not text: `--out $'run\xff'` names a folder whose
// name is not UTF-8, and so may a --data path or lm's --prompt. JSON
// (config.json) holds only UTF-8, and a terminal shows a stray byte as a
// replacement mark or not at all. So what a user typed is recorded and shown
// through escape_bytes: well-formed UTF-8 stays as it is, and every byte that
// is not part of a well-formed sequence (an overlong form, a surrogate, a
// code point above U+10FFFF, a cut-off sequence, a lone continuation byte)
// becomes the four characters \xHH.
//
//   escape_bytes("run\xff")       → "run\\xff"   (the text run\xff)
//   escape_bytes("caf\xc3\xa9")   → "café"        (UTF-8 already: unchanged)
//
// Equal bytes give equal text, so a resumed run compares its paths with
// config.json's as before, and text that is UTF-8 already (every path so
// far) is recorded exactly as before. The price: the mapping is not
// one-to-one, and a name holding the four characters \xff reads the same as
// one holding the byte 0xff.
//
// An error message is one line: one_line_escaped also writes the ASCII
// control characters (a newline or a tab in a path, 0x00-0x1f and 0x7f) as \xHH.
#include <string>
#include <string_view>

namespace rg {

std::string escape_bytes(std::string_view bytes);
std::string one_line_escaped(std::string_view bytes);

}  // namespace rg
