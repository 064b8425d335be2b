#include "rmsgrad/experiments/cifar10/image_decode.h"

#include <png.h>
#include <turbojpeg.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/cifar10/cifar_data.h"

// The formats' reference decoders, libpng and libjpeg-turbo: an image file may
// come from anyone, and both are fuzzed continuously upstream (OSS-Fuzz).
// (stb_image 2.27, Debian 12's, decoded the images until 2026-12-02: it reads
// and writes out of bounds on corrupt files — a Huffman table of more than 256
// codes, a scan naming a table the file never defines — fixed only in 2.28.)

namespace rg::cifar {

namespace {

constexpr unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
constexpr unsigned char kJpegStart[3] = {0xFF, 0xD8, 0xFF};  // SOI, then a marker

bool starts_with(const std::vector<unsigned char>& bytes, const unsigned char* magic, size_t length) {
  return bytes.size() >= length && std::memcmp(bytes.data(), magic, length) == 0;
}

void check_side(int64_t width, int64_t height, const std::string& name) {
  check(width == kSide && height == kSide, "cifar10: image {} is {}×{}, expected 32×32", name, width, height);
}

// Interleaved RGB bytes → the [3, 32, 32] planes at `out`.
void to_planes(const unsigned char* pixels, int64_t stride, float* out) {
  for (int64_t c = 0; c < kChannels; ++c)
    for (int64_t p = 0; p < kSide * kSide; ++p) out[c * kSide * kSide + p] = pixels[p * stride + c];
}

// libpng. Its simplified API (png_image) would convert a 16-bit or
// gamma-tagged file to sRGB; a dataset's pixels are the values it stores
// (as stb and PIL read them), so the file is read with the plain API and only
// these transforms: 16 bits to the high 8, a palette or grey to RGB, alpha
// dropped (a transparent pixel keeps its colour). libpng reports an error by
// calling png_fail, which must not return: it keeps the message and jumps
// back to read_png's setjmp. Between the two only C frames and functions with
// trivially destructible locals run, so the jump skips no destructor.
struct PngSource {
  const unsigned char* data;
  size_t size, at;
  char message[200];
  std::jmp_buf jump;
};

[[noreturn]] void png_fail(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof(source->message), "%s", message);
  std::longjmp(source->jump, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}  // an ancillary chunk's bad CRC, an odd colour profile

void png_read_bytes(png_structp png, png_bytep out, size_t length) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > source->size - source->at) png_error(png, "the file is truncated: it ends before the image does");
  std::memcpy(out, source->data + source->at, length);
  source->at += length;
}

// Reads the header into width × height and, when that is 32×32, the pixels
// into `rgb` (interleaved). False, with source.message, on any error.
bool read_png(PngSource& source, png_uint_32& width, png_uint_32& height, unsigned char* rgb) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, png_fail, png_ignore_warning);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(source.message, sizeof(source.message), "out of memory");
    return false;
  }
  if (setjmp(source.jump) != 0) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &source, png_read_bytes);
  png_read_info(png, info);
  int depth = 0, colour = 0;
  png_get_IHDR(png, info, &width, &height, &depth, &colour, nullptr, nullptr, nullptr);
  if (width == kSide && height == kSide) {
    png_set_strip_16(png);
    if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if ((colour & PNG_COLOR_MASK_COLOR) == 0) {
      png_set_expand_gray_1_2_4_to_8(png);
      png_set_gray_to_rgb(png);
    }
    png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != kSide * 3) png_error(png, "rows are not 32 RGB pixels after conversion");
    png_bytep rows[kSide];
    for (int64_t y = 0; y < kSide; ++y) rows[y] = rgb + y * kSide * 3;
    png_read_image(png, rows);
    png_read_end(png, nullptr);
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

void decode_png(const std::vector<unsigned char>& bytes, const std::string& name, float* out) {
  PngSource source{bytes.data(), bytes.size(), 0, {}, {}};
  png_uint_32 width = 0, height = 0;
  unsigned char rgb[kSide * kSide * 3];
  if (!read_png(source, width, height, rgb))
    throw Error(fmt::format("cifar10: cannot decode image {}: {}", name, source.message));
  check_side(width, height, name);
  to_planes(rgb, 3, out);
}

// TurboJPEG: the size from the header, then the whole file, with any warning
// (corrupt entropy-coded data, a premature end, bytes between markers) an
// error rather than a patched-up image.
void decode_jpeg(const std::vector<unsigned char>& bytes, const std::string& name, float* out) {
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(), tjDestroy);
  check(handle != nullptr, "cifar10: cannot start a JPEG decoder: {}", tjGetErrorStr2(nullptr));
  auto fail = [&] {
    return Error(fmt::format("cifar10: cannot decode image {}: {}", name, tjGetErrorStr2(handle.get())));
  };
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), bytes.data(), bytes.size(), &width, &height, &subsampling, &colorspace) != 0)
    throw fail();
  // A file cut short before its frame header "succeeds" with a 0×0 image.
  check(width > 0 && height > 0, "cifar10: cannot decode image {}: the JPEG is truncated or damaged (no image size "
        "in its {} bytes)", name, bytes.size());
  check_side(width, height, name);
  check(colorspace != TJCS_CMYK && colorspace != TJCS_YCCK,
        "cifar10: image {} is a CMYK JPEG; only colour (YCbCr, RGB) and grey JPEGs are read", name);
  std::vector<unsigned char> pixels(kSide * kSide * 3);
  if (tjDecompress2(handle.get(), bytes.data(), bytes.size(), pixels.data(), kSide, 0, kSide, TJPF_RGB,
                    TJFLAG_STOPONWARNING) != 0)
    throw fail();
  to_planes(pixels.data(), 3, out);
}

}  // namespace

void decode_image(const std::vector<unsigned char>& bytes, const std::string& name, float* out) {
  check(bytes.size() <= kMaxImageFileBytes, "cifar10: image {} has {} bytes, more than a 32×32 image needs", name,
        bytes.size());
  if (starts_with(bytes, kPngSignature, sizeof(kPngSignature)))
    decode_png(bytes, name, out);
  else if (starts_with(bytes, kJpegStart, sizeof(kJpegStart)))
    decode_jpeg(bytes, name, out);
  else
    throw Error(fmt::format("cifar10: cannot decode image {}: it is neither a PNG nor a JPEG", name));
}

}  // namespace rg::cifar
