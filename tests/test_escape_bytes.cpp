// Bytes shown as text (core/escape_bytes.h): UTF-8 kept, every other byte as
// \xHH, and whatever comes out is text a JSON library writes.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "rmsgrad/core/escape_bytes.h"
#include "rmsgrad/core/random.h"

using rg::escape_bytes;
using rg::one_line_escaped;

TEST_CASE("well-formed UTF-8 is kept as it is") {
  CHECK(escape_bytes("") == "");
  CHECK(escape_bytes("runs/cifar10") == "runs/cifar10");
  CHECK(escape_bytes("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(escape_bytes("a\tb\nc\\xff") == "a\tb\nc\\xff");  // controls kept; a backslash too (not one-to-one)
  CHECK(escape_bytes(std::string("a\0b", 3)) == std::string("a\0b", 3));
  // The edges of the table: U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+FFFF, U+10000, U+10FFFF.
  for (const char* edge : {"\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf",
                           "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"})
    CHECK(escape_bytes(edge) == edge);
}

TEST_CASE("every byte outside a well-formed sequence becomes \\xHH") {
  CHECK(escape_bytes("run\xff") == "run\\xff");
  CHECK(escape_bytes("d\xfe") == "d\\xfe");
  CHECK(escape_bytes("\x80") == "\\x80");                  // a lone continuation byte
  CHECK(escape_bytes("\xc0\xaf") == "\\xc0\\xaf");         // an overlong '/'
  CHECK(escape_bytes("\xe0\x80\xaf") == "\\xe0\\x80\\xaf");  // overlong in three bytes
  CHECK(escape_bytes("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate, U+D800
  CHECK(escape_bytes("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  CHECK(escape_bytes("\xf5\x80") == "\\xf5\\x80");
  // A sequence cut short: its bytes escaped, and what follows read afresh.
  CHECK(escape_bytes("\xe2\x82" "a\xc3\xa9") == "\\xe2\\x82a\xc3\xa9");
  CHECK(escape_bytes("\xc3") == "\\xc3");
  CHECK(escape_bytes("\xc3\xc3\xa9") == "\\xc3\xc3\xa9");
}

TEST_CASE("equal bytes give equal text, and UTF-8 text stays fixed") {
  CHECK(escape_bytes("run\xff") == escape_bytes(std::string("run\xff")));
  CHECK(escape_bytes(escape_bytes("run\xff\xfe")) == escape_bytes("run\xff\xfe"));
}

TEST_CASE("one_line_escaped also writes the control characters as \\xHH") {
  CHECK(one_line_escaped("a\nb\tc\x7f") == "a\\x0ab\\x09c\\x7f");
  CHECK(one_line_escaped(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(one_line_escaped("run\xff \xc3\xa9") == "run\\xff \xc3\xa9");
}

TEST_CASE("whatever the bytes, the JSON library writes the escaped text and reads it back") {
  rg::Generator generator(67);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes(generator.randint(12), '\0');
    for (char& c : bytes) c = static_cast<char>(generator.randint(256));
    const std::string text = escape_bytes(bytes);
    CAPTURE(text);
    std::string dumped;
    REQUIRE_NOTHROW(dumped = nlohmann::json(text).dump());  // type_error 316 on a byte that is not UTF-8
    CHECK(nlohmann::json::parse(dumped).get<std::string>() == text);
    CHECK(escape_bytes(text) == text);
    REQUIRE_NOTHROW(nlohmann::json(one_line_escaped(bytes)).dump());
    CHECK(one_line_escaped(bytes).find('\n') == std::string::npos);
  }
}
