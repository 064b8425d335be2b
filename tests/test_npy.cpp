// NumPy .npy files: write_npy → read_npy_matrix round trips, float16 read
// exactly from hand-built bytes, format versions 2.0 and 3.0, one clear error
// per kind of malformed file, and the real ResNet features in ../shared/data
// when present.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/npy.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

void write_bytes(const std::string& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A .npy image built by hand: magic, version, header length (u16 for major
// version 1, u32 otherwise), the dict padded with spaces and a '\n' so the
// data starts at a multiple of `align`, then `data` as is.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1, int align = 64) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((align - (prefix + header.size() + 1) % align) % align, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
  return out + header + data;
}

std::string f16_bytes(const std::vector<uint16_t>& halves) {
  std::string out;
  for (uint16_t h : halves) out.push_back(static_cast<char>(h & 0xFF)), out.push_back(static_cast<char>(h >> 8));
  return out;
}

std::string f32_bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

// The message read_npy_matrix throws for `file` ("" when it does not throw).
std::string error_of(const std::string& file) {
  try {
    read_npy_matrix(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Writes `bytes` to `name` and checks that reading it fails with a message
// that starts with the path and contains every phrase.
void check_error(const TempDir& tmp, const std::string& name, const std::string& bytes,
                 const std::vector<std::string>& phrases) {
  const std::string file = tmp.file(name);
  write_bytes(file, bytes);
  const std::string message = error_of(file);
  CAPTURE(name);
  CAPTURE(message);
  CHECK(message.rfind(file + ": ", 0) == 0);
  for (const std::string& phrase : phrases) CHECK_MESSAGE(message.find(phrase) != std::string::npos, phrase);
}

}  // namespace

TEST_CASE("write_npy then read_npy_matrix gives the same matrix; the data starts at a multiple of 64") {
  TempDir tmp("roundtrip");
  Tensor t =
      Tensor::from(Shape{3, 4}, {0.0f, -1.5f, 3.25f, 1e-30f, 7.0f, -0.0f, 1e30f, 2.0f, 0.1f, -0.2f, 0.3f, 65504.0f});
  const std::string file = tmp.file("m.npy");
  write_npy(file, t);
  // The 59-character dict, '\n' and 10 bytes of preamble round up to 128.
  CHECK(fs::file_size(file) == 128 + 12 * 4);
  std::ifstream in(file, std::ios::binary);
  std::string head(128, '\0');
  in.read(head.data(), 128);
  CHECK(head.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));  // version 1.0, HLEN 118
  CHECK(head.substr(10).find("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }") == 0);
  CHECK(head.back() == '\n');
  Tensor back = read_npy_matrix(file);
  CHECK(back.shape() == Shape{3, 4});
  CHECK(max_abs_diff(back, t) == 0.0f);
  CHECK(std::signbit(back.at({1, 1})));  // -0 stays -0: the bytes are copied

  // An empty matrix and a one-row matrix also round trip.
  write_npy(file, Tensor::zeros(Shape{0, 5}));
  CHECK(read_npy_matrix(file).shape() == Shape{0, 5});
  write_npy(file, Tensor::from(Shape{1, 2}, {4.0f, 5.0f}));
  CHECK(read_npy_matrix(file).to_vector() == std::vector<float>{4.0f, 5.0f});

  // Other ranks are written (any rank), but the matrix reader names their shape.
  write_npy(file, Tensor::arange(5));
  CHECK(fs::file_size(file) % 4 == 0);
  CHECK_THROWS_WITH_AS(read_npy_matrix(file), doctest::Contains("not 2-D: its shape is (5,)"), Error);
  write_npy(file, Tensor::zeros(Shape{2, 3, 4}));
  CHECK_THROWS_WITH_AS(read_npy_matrix(file), doctest::Contains("not 2-D: its shape is (2, 3, 4)"), Error);
  write_npy(file, Tensor::scalar(1.0f));
  CHECK_THROWS_WITH_AS(read_npy_matrix(file), doctest::Contains("not 2-D: its shape is ()"), Error);
}

TEST_CASE("float16 is widened exactly: normals, the largest half, subnormals, infinity") {
  TempDir tmp("half");
  const std::string file = tmp.file("h.npy");
  // 1.0, -2.0, 65504 (largest half), 2^-24 (smallest subnormal), 0.5, +inf.
  write_bytes(file, npy_bytes(dict("<f2", "(2, 3)"), f16_bytes({0x3C00, 0xC000, 0x7BFF, 0x0001, 0x3800, 0x7C00})));
  Tensor m = read_npy_matrix(file);
  REQUIRE(m.shape() == Shape{2, 3});
  CHECK(m.at({0, 0}) == 1.0f);
  CHECK(m.at({0, 1}) == -2.0f);
  CHECK(m.at({0, 2}) == 65504.0f);
  CHECK(m.at({1, 0}) == std::ldexp(1.0f, -24));
  CHECK(m.at({1, 1}) == 0.5f);
  CHECK(m.at({1, 2}) == std::numeric_limits<float>::infinity());

  // The rest of the half line, through the conversion itself.
  CHECK(half_to_float(0x0000) == 0.0f);
  CHECK(std::signbit(half_to_float(0x8000)));
  CHECK(half_to_float(0x03FF) == 1023.0f * std::ldexp(1.0f, -24));  // largest subnormal
  CHECK(half_to_float(0x0400) == std::ldexp(1.0f, -14));            // smallest normal
  CHECK(half_to_float(0x8001) == -std::ldexp(1.0f, -24));
  CHECK(half_to_float(0x3555) == 1365.0f / 4096.0f);  // 0.333251953125, the half nearest 1/3
  CHECK(half_to_float(0xFC00) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(half_to_float(0x7E00)));
  CHECK(std::isnan(half_to_float(0xFC01)));

  // Header variations NumPy and others produce: keys in any order, no
  // trailing comma, '|' and '=' byte orders, 16-byte alignment (old NumPy),
  // Python 2 long integers.
  write_bytes(
      file, npy_bytes("{'shape': (1, 2), 'fortran_order': False, 'descr': '|f2'}", f16_bytes({0x3C00, 0x4000}), 1, 16));
  CHECK(read_npy_matrix(file).to_vector() == std::vector<float>{1.0f, 2.0f});
  write_bytes(file, npy_bytes("{\"descr\":\"=f4\",\"fortran_order\":False,\"shape\":(2L,1L),}", f32_bytes({3, 4})));
  CHECK(read_npy_matrix(file).to_vector() == std::vector<float>{3.0f, 4.0f});
}

TEST_CASE("format versions 2.0 and 3.0 (a 4-byte header length) are read") {
  TempDir tmp("versions");
  const std::string file = tmp.file("v.npy");
  for (int major : {2, 3}) {
    CAPTURE(major);
    write_bytes(file, npy_bytes(dict("<f4", "(2, 2)"), f32_bytes({1, 2, 3, 4}), major));
    Tensor m = read_npy_matrix(file);
    CHECK(m.shape() == Shape{2, 2});
    CHECK(m.to_vector() == std::vector<float>{1, 2, 3, 4});
  }
  CHECK(fs::file_size(file) % 64 == 16);  // 64 bytes of preamble and header, then 16 of data
}

TEST_CASE("every malformed file is one rg::Error that starts with the path and says what is wrong") {
  TempDir tmp("errors");
  const std::string data6 = f32_bytes({1, 2, 3, 4, 5, 6});
  const std::string ok = dict("<f4", "(2, 3)");

  const std::string missing = tmp.file("missing.npy");
  CHECK(error_of(missing) == missing + ": no such file");
  CHECK(error_of(tmp.path.string()).find("not a regular file") != std::string::npos);

  check_error(tmp, "zip.npy", std::string("PK\x03\x04 this is a zip"), {"not an .npy file", "magic"});
  check_error(tmp, "short.npy", "\x93NUM", {"not an .npy file"});
  check_error(tmp, "empty.npy", "", {"not an .npy file"});
  check_error(tmp, "preamble.npy", std::string("\x93NUMPY\x01\x00\x05", 9), {"ends inside the .npy preamble"});

  std::string v4 = npy_bytes(ok, data6);
  v4[6] = 4;
  check_error(tmp, "v4.npy", v4, {"unsupported .npy format version 4.0", "1.0, 2.0, 3.0"});
  std::string v11 = npy_bytes(ok, data6);
  v11[7] = 1;
  check_error(tmp, "v11.npy", v11, {"unsupported .npy format version 1.1"});

  std::string long_header = npy_bytes(ok, data6);
  long_header[8] = static_cast<char>(0xF4), long_header[9] = 0x01;  // HLEN 500 in a 152-byte file
  check_error(tmp, "hlen.npy", long_header, {"header length 500 runs past the end of the file (152 bytes)"});

  check_error(tmp, "nodescr.npy", npy_bytes("{'fortran_order': False, 'shape': (2, 3), }", data6),
              {"cannot parse the .npy header", "missing the 'descr' key"});
  check_error(tmp, "noorder.npy", npy_bytes("{'descr': '<f4', 'shape': (2, 3), }", data6),
              {"cannot parse the .npy header", "missing the 'fortran_order' key"});
  check_error(tmp, "noshape.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, }", data6),
              {"cannot parse the .npy header", "missing the 'shape' key"});
  check_error(tmp, "unclosed.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", data6),
              {"cannot parse the .npy header", "'}' missing"});
  check_error(tmp, "notdict.npy", npy_bytes("array([1, 2])", data6), {"cannot parse the .npy header"});
  check_error(tmp, "extrakey.npy",
              npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", data6),
              {"cannot parse the .npy header", "unexpected key 'x'"});
  check_error(tmp, "twice.npy",
              npy_bytes("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", data6),
              {"cannot parse the .npy header", "'descr' appears twice"});
  check_error(tmp, "order.npy", npy_bytes(dict("<f4", "(2, 3)", "0"), data6), {"'fortran_order' is 0"});
  for (const char* shape : {"(2, -3)", "[2, 3]", "(2, 'a')", "(6)", "None"}) {
    CAPTURE(shape);
    check_error(tmp, "shape.npy", npy_bytes(dict("<f4", shape), data6),
                {"cannot parse the .npy header", "bad shape tuple"});
  }

  check_error(tmp, "float.npy", npy_bytes(dict("<f4", "(2.5, 3)"), data6),
              {"cannot parse the .npy header", "expected ')' at byte"});

  for (const char* descr : {"<f8", ">f4", ">f2", "<i4", "|O", "<U8"}) {
    CAPTURE(descr);
    check_error(tmp, "dtype.npy", npy_bytes(dict(descr, "(2, 3)"), data6),
                {"unsupported dtype '" + std::string(descr) + "'", "float16 '<f2' and float32 '<f4'"});
  }
  check_error(tmp, "struct.npy",
              npy_bytes("{'descr': [('x', '<f4'), ('y', '<f4')], 'fortran_order': False, 'shape': (3,), }", data6),
              {"unsupported dtype [('x', '<f4'), ('y', '<f4')] (a structured dtype)"});

  check_error(tmp, "fortran.npy", npy_bytes(dict("<f4", "(2, 3)", "True"), data6), {"fortran_order is True"});
  check_error(tmp, "rank1.npy", npy_bytes(dict("<f4", "(6,)"), data6), {"not 2-D", "(6,)"});
  check_error(tmp, "rank3.npy", npy_bytes(dict("<f4", "(1, 2, 3)"), data6), {"not 2-D", "(1, 2, 3)"});
  check_error(tmp, "huge.npy", npy_bytes(dict("<f4", "(4611686018427387904, 4)"), data6), {"too large"});
  check_error(tmp, "huge2.npy", npy_bytes(dict("<f2", "(99999999999999999999, 4)"), data6),
              {"cannot parse the .npy header", "integer is too large"});

  check_error(tmp, "truncated.npy", npy_bytes(ok, data6.substr(0, 20)),
              {"data truncated", "(2, 3) of float32 needs 24 bytes", "the file has 20"});
  check_error(tmp, "truncated16.npy", npy_bytes(dict("<f2", "(1000, 2048)"), f16_bytes({1, 2, 3})),
              {"data truncated", "(1000, 2048) of float16 needs 4096000 bytes", "the file has 6"});
  check_error(tmp, "extra.npy", npy_bytes(ok, data6 + "xy"),
              {"2 extra bytes after the data", "needs 24 bytes", "the file has 26"});
}

TEST_CASE("the real ResNet-50 features of Multi30k test 2016 in ../shared/data, when present") {
  const fs::path file =
      fs::path(RG_SHARED_DATA_DIR) / "multi30k" / "features" / "test_2016_flickr-resnet50-avgpool.npy";
  if (!fs::exists(file)) {
    MESSAGE("skipped: " << file.string() << " does not exist (a fresh clone without ../shared/data)");
    return;
  }
  Tensor m = read_npy_matrix(file.string());
  REQUIRE(m.shape() == Shape{1000, 2048});
  // Average-pooled features after a ReLU: finite and non-negative.
  int64_t bad = 0;
  for (float x : m.span()) bad += !std::isfinite(x) || x < 0.0f;
  CHECK(bad == 0);
  // Reference values from /usr/bin/python3 with numpy.load. The float16 →
  // float32 conversion is exact, so single elements compare with ==.
  CHECK(m.at({0, 0}) == 0.144775390625f);
  CHECK(m.at({0, 1}) == 2.646484375f);
  CHECK(m.at({500, 1000}) == 0.1134033203125f);
  CHECK(m.at({999, 2047}) == 0.12188720703125f);
  CHECK(m.at({833, 623}) == 9.2109375f);  // the maximum
  // The sums need no tolerance either: every half is a multiple of 2^-24 and
  // both sums stay below 2^20, so every partial sum has at most 44
  // significant bits and a double holds it exactly, in any order. numpy's
  // pairwise a.astype(float64).sum() and math.fsum both give these values.
  double row0 = 0.0, total = 0.0;
  for (int64_t j = 0; j < 2048; ++j) row0 += m.data()[j];
  for (float x : m.span()) total += x;
  CHECK(row0 == 855.8198175430298);
  CHECK(total == 990854.5312248468);
}
