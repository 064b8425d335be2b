#include "rmsgrad/experiments/cifar10/image_decode.h"

#include <png.h>
#include <turbojpeg.h>

#include <cstring>
#include <memory>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/cifar10/cifar_data.h"

// The formats' reference decoders, libpng and libjpeg-turbo: an image file may
// come from anyone, and both are fuzzed continuously upstream (OSS-Fuzz). (stb_image
// 2.27, Debian 12's, decoded the images until 2026-12-02: it reads and writes
// out of bounds on corrupt files — a Huffman table of more than 256 codes, a
// scan naming a table the file never defines — fixed only in stb 2.28.)

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

// libpng's simplified reader: the size from the header (checked before any
// pixel is decoded), then every critical chunk and the whole deflate stream.
// Read as 8-bit sRGB with alpha, so no alpha needs a background; the alpha is
// then dropped. Its warnings (an ancillary chunk's bad CRC, a questionable
// colour profile) are not failures.
void decode_png(const std::vector<unsigned char>& bytes, const std::string& name, float* out) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  auto fail = [&] {
    const std::string reason = image.message;
    png_image_free(&image);
    return Error(fmt::format("cifar10: cannot decode image {}: {}", name, reason));
  };
  if (png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()) == 0) throw fail();
  if (image.width != kSide || image.height != kSide) {
    png_image_free(&image);
    check_side(image.width, image.height, name);
  }
  image.format = PNG_FORMAT_RGBA;
  std::vector<unsigned char> pixels(PNG_IMAGE_SIZE(image));
  if (png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr) == 0) throw fail();
  to_planes(pixels.data(), 4, out);
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
  check_side(width, height, name);
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
