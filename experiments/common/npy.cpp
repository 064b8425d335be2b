#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/experiments/common/npy.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "rmsgrad/core/error.h"

namespace rg {

static_assert(std::endian::native == std::endian::little,
              "npy.cpp reads and writes little-endian data by copying bytes");

namespace {

namespace fs = std::filesystem;

constexpr char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

// A value of the Python literal subset .npy headers use.
struct PyValue {
  enum Kind { Str, Int, Bool, None, Tuple, List } kind = None;
  std::string str;             // Str
  int64_t integer = 0;         // Int; Bool as 0 or 1
  std::vector<PyValue> items;  // Tuple, List
  std::string source;          // the literal as written, for messages
};

// Thrown inside the parser; read_npy_matrix turns it into one rg::Error.
struct HeaderSyntax {
  std::string detail;
};

// Recursive descent over: dict of string keys; strings ('…' or "…"),
// integers (an old Python 2 'L' suffix allowed), True/False/None, tuples and
// lists, with optional trailing commas. "(5)" is the integer 5, as in Python.
class LiteralParser {
 public:
  explicit LiteralParser(std::string_view text) : text_(text) {}

  std::vector<std::pair<std::string, PyValue>> dict() {
    std::vector<std::pair<std::string, PyValue>> entries;
    skip_space();
    expect('{');
    for (;;) {
      skip_space();
      if (eat('}')) break;
      PyValue key = value();
      if (key.kind != PyValue::Str) fail(fmt::format("the dict key {} is not a string", key.source));
      skip_space();
      expect(':');
      entries.emplace_back(key.str, value());
      skip_space();
      if (eat(',')) continue;
      expect('}');
      break;
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the closing '}'");
    return entries;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw HeaderSyntax{fmt::format("{} at byte {} of the header", what, pos_)};
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(pos_ < text_.size() ? fmt::format("expected '{}'", c) : fmt::format("'{}' missing", c));
  }

  PyValue value() {
    skip_space();
    if (pos_ >= text_.size()) fail("a value is missing");
    const size_t start = pos_;
    PyValue v;
    const char c = text_[pos_];
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Str;
      for (++pos_;; ++pos_) {
        if (pos_ >= text_.size()) fail("unterminated string");
        if (text_[pos_] == c) break;
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
        v.str.push_back(text_[pos_]);
      }
      ++pos_;
    } else if (c == '(' || c == '[') {
      const char close = c == '(' ? ')' : ']';
      v.kind = c == '(' ? PyValue::Tuple : PyValue::List;
      bool comma = false;
      for (++pos_;;) {
        skip_space();
        if (eat(close)) break;
        v.items.push_back(value());
        skip_space();
        if (eat(',')) {
          comma = true;
          continue;
        }
        expect(close);
        break;
      }
      if (v.kind == PyValue::Tuple && v.items.size() == 1 && !comma) {
        // "(5)" is 5. Moved out first: assigning v from its own element
        // would free that element while it is being read.
        PyValue inner = std::move(v.items[0]);
        v = std::move(inner);
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Int;
      const bool negative = eat('-');
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') fail("a digit is missing");
      for (; pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; ++pos_) {
        const int digit = text_[pos_] - '0';
        if (v.integer > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("an integer is too large");
        v.integer = v.integer * 10 + digit;
      }
      if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;
      if (negative) v.integer = -v.integer;
    } else {
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      const std::string_view word = text_.substr(start, pos_ - start);
      if (word == "True" || word == "False")
        v.kind = PyValue::Bool, v.integer = word == "True";
      else if (word == "None")
        v.kind = PyValue::None;
      else if (word.empty())
        fail(fmt::format("unexpected character '{}'", c));
      else
        fail(fmt::format("unexpected name '{}'", word));
    }
    v.source = std::string(text_.substr(start, pos_ - start));
    return v;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// The header for a message: trailing padding dropped, control bytes as '?'.
std::string printable(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.remove_suffix(1);
  std::string out;
  for (char c : text.substr(0, 200)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  if (text.size() > 200) out += "...";
  return out;
}

// Python's spelling: (), (5,), (1000, 2048).
std::string shape_text(const std::vector<int64_t>& dims) {
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  return fmt::format("({})", fmt::join(dims, ", "));
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

Header parse_header(const std::string& path, const std::string& text) {
  auto bad = [&](const std::string& detail) {
    return Error(fmt::format("{}: cannot parse the .npy header ({}): {}", path, detail, printable(text)));
  };
  std::vector<std::pair<std::string, PyValue>> entries;
  try {
    entries = LiteralParser(text).dict();
  } catch (const HeaderSyntax& e) {
    throw bad(e.detail);
  }
  const char* keys[3] = {"descr", "fortran_order", "shape"};
  const PyValue* found[3] = {nullptr, nullptr, nullptr};
  for (const auto& [key, value] : entries) {
    int k = 0;
    while (k < 3 && key != keys[k]) ++k;
    if (k == 3) throw bad(fmt::format("unexpected key '{}'; expected 'descr', 'fortran_order' and 'shape'", key));
    if (found[k] != nullptr) throw bad(fmt::format("the key '{}' appears twice", key));
    found[k] = &value;
  }
  for (int k = 0; k < 3; ++k)
    if (found[k] == nullptr) throw bad(fmt::format("missing the '{}' key", keys[k]));
  Header h;
  if (found[0]->kind == PyValue::List)  // a structured dtype, e.g. [('x', '<f4'), ('y', '<f4')]
    throw Error(
        fmt::format("{}: unsupported dtype {} (a structured dtype); supported are float16 '<f2' and "
                    "float32 '<f4'",
                    path, printable(found[0]->source)));
  if (found[0]->kind != PyValue::Str) throw bad(fmt::format("'descr' is {}, not a string", found[0]->source));
  h.descr = found[0]->str;
  if (found[1]->kind != PyValue::Bool)
    throw bad(fmt::format("'fortran_order' is {}, not True or False", found[1]->source));
  h.fortran_order = found[1]->integer != 0;
  const PyValue& shape = *found[2];
  bool ok = shape.kind == PyValue::Tuple;
  for (const PyValue& d : shape.items) ok = ok && d.kind == PyValue::Int && d.integer >= 0;
  if (!ok)
    throw bad(fmt::format("bad shape tuple {}; expected non-negative integers such as (1000, 2048)", shape.source));
  for (const PyValue& d : shape.items) h.shape.push_back(d.integer);
  return h;
}

}  // namespace

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  int32_t exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FFu;
  uint32_t out;
  if (exponent == 0x1F) {  // inf (mantissa 0) or NaN, payload kept
    out = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent == 0 && mantissa == 0) {  // ±0
    out = sign;
  } else {
    if (exponent == 0) {  // subnormal m·2^-24: shift the leading 1 up to the implicit bit
      exponent = 1;
      while ((mantissa & 0x400u) == 0) mantissa <<= 1, --exponent;
      mantissa &= 0x3FFu;
    }
    out = sign | (static_cast<uint32_t>(exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(out);
}

Tensor read_npy_matrix(const std::string& path) {
  std::error_code ec;
  check(fs::exists(path, ec), "{}: no such file", path);
  check(fs::is_regular_file(path, ec), "{}: not a regular file", path);
  const uint64_t size = fs::file_size(path, ec);
  check(!ec, "{}: cannot read the file size: {}", path, ec.message());
  std::ifstream in(path, std::ios::binary);
  check(in.is_open(), "{}: cannot open for reading: {}", path, std::strerror(errno));
  auto read_bytes = [&](void* into, uint64_t n) {
    in.read(static_cast<char*>(into), static_cast<std::streamsize>(n));
    check(static_cast<uint64_t>(in.gcount()) == n, "{}: read error after {} of {} bytes", path, in.gcount(), n);
  };

  unsigned char pre[12] = {};
  read_bytes(pre, std::min<uint64_t>(size, 8));
  check(size >= 6 && std::memcmp(pre, kMagic, 6) == 0,
        "{}: not an .npy file (it does not start with the magic string \\x93NUMPY)", path);
  check(size >= 8, "{}: the file ends inside the .npy preamble ({} bytes)", path, size);
  const int major = pre[6], minor = pre[7];
  check((major == 1 || major == 2 || major == 3) && minor == 0,
        "{}: unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", path, major, minor);
  const int length_bytes = major == 1 ? 2 : 4;
  check(size >= 8u + length_bytes, "{}: the file ends inside the .npy preamble ({} bytes)", path, size);
  read_bytes(pre + 8, length_bytes);
  uint64_t header_length = 0;
  for (int i = length_bytes - 1; i >= 0; --i) header_length = header_length << 8 | pre[8 + i];
  const uint64_t data_offset = 8 + length_bytes + header_length;
  check(data_offset <= size, "{}: the header length {} runs past the end of the file ({} bytes)", path, header_length,
        size);
  std::string text(header_length, '\0');
  read_bytes(text.data(), header_length);
  const Header h = parse_header(path, text);

  const std::string& t = h.descr;
  const bool little = t.size() == 3 && (t[0] == '<' || t[0] == '=' || t[0] == '|');
  const bool f16 = little && t.substr(1) == "f2", f32 = little && t.substr(1) == "f4";
  check(f16 || f32, "{}: unsupported dtype '{}'; supported are float16 '<f2' and float32 '<f4'", path, printable(t));
  const char* dtype = f16 ? "float16" : "float32";
  const int64_t item = f16 ? 2 : 4;
  check(!h.fortran_order, "{}: fortran_order is True; only C-order arrays are supported (numpy.ascontiguousarray)",
        path);
  const std::string shape = shape_text(h.shape);
  check(h.shape.size() == 2, "{}: the array is not 2-D: its shape is {}; expected a matrix (N, D)", path, shape);
  const int64_t n = h.shape[0], d = h.shape[1];
  check(d == 0 || n <= std::numeric_limits<int64_t>::max() / item / d,
        "{}: the shape {} is too large: its {} data would exceed 2^63 bytes", path, shape, dtype);
  const uint64_t expected = static_cast<uint64_t>(n * d * item), found = size - data_offset;
  check(found >= expected, "{}: data truncated: shape {} of {} needs {} bytes after the header but the file has {}",
        path, shape, dtype, expected, found);
  check(found == expected,
        "{}: {} extra bytes after the data: shape {} of {} needs {} bytes after the header but the file has {}", path,
        found - expected, shape, dtype, expected, found);

  Tensor out = Tensor::empty(Shape{n, d});
  if (f32) {
    read_bytes(out.data(), expected);
  } else {
    std::vector<uint16_t> chunk(1 << 16);
    float* dst = out.data();
    for (int64_t done = 0, total = n * d; done < total;) {
      const int64_t count = std::min<int64_t>(total - done, static_cast<int64_t>(chunk.size()));
      read_bytes(chunk.data(), static_cast<uint64_t>(count) * 2);
      for (int64_t i = 0; i < count; ++i) dst[done + i] = half_to_float(chunk[i]);
      done += count;
    }
  }
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  check(t.defined(), "{}: write_npy: the tensor is undefined", path);
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}", shape_text(t.shape().dims()));
  // Pad with spaces so that magic (6) + version (2) + length (2) + header,
  // ending in '\n', is a multiple of 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  check(header.size() <= 0xFFFF, "{}: write_npy: the header is too long ({} bytes)", path, header.size());
  const char version_and_length[4] = {1, 0, static_cast<char>(header.size() & 0xFF),
                                      static_cast<char>(header.size() >> 8)};
  AtomicFile out(path);  // whole, never through a link
  out.write(kMagic, 6);
  out.write(version_and_length, 4);
  out.write(header);
  out.write(t.data(), static_cast<size_t>(t.numel()) * sizeof(float));
  out.commit();
}

}  // namespace rg
