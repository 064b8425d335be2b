#pragma once
// One 32×32 PNG or JPEG file of an image folder, decoded into channel planes
// by libpng or libjpeg-turbo.
#include <cstdint>
#include <string>
#include <vector>

namespace rg::cifar {

// Decodes `bytes`, a 32×32 PNG or JPEG named `name` (for messages), into the
// [3, 32, 32] planes at `out`, pixel values 0..255: a PNG's stored values (16
// bits keep their high 8, grey and palettes become RGB, alpha is dropped, a
// gamma tag is not applied), a JPEG's as libjpeg-turbo decodes them. Anything
// else — another format, another size, a CMYK JPEG, a corrupt or truncated
// file — is an rg::Error naming the file and what is wrong.
void decode_image(const std::vector<unsigned char>& bytes, const std::string& name, float* out);

// A 32×32 PNG or JPEG takes a few KB; a file claiming more than this is not
// one of ours, and reading it would only let it make us allocate.
inline constexpr uint64_t kMaxImageFileBytes = uint64_t{16} << 20;

}  // namespace rg::cifar
