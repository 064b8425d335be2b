#pragma once
// CIFAR-10 data: the official binary batches, image folders (plain or in
// an archive), and a synthetic stand-in so the driver runs with no data at all.
//
// Images are kept as floats in [N, 3, 32, 32] (channel planes, as the binary
// format stores them) with pixel values 0..255 until preprocessing.
#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/core/random.h"
#include "rmsgrad/core/tensor.h"

namespace rg::cifar {

inline constexpr int64_t kSide = 32, kChannels = 3, kPixels = kChannels * kSide * kSide, kClasses = 10;
inline constexpr int64_t kRecordBytes = 1 + kPixels;  // label byte + R, G, B planes

struct ImageSet {
  Tensor images;                // [N, 3, 32, 32]
  std::vector<int32_t> labels;  // N values in [0, 10)
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};

struct Splits {
  ImageSet train, valid, test;  // test may be empty
  std::string description;      // where each split came from, for the log
  std::vector<std::string> skipped;  // files of the image folders that are not images, unread (skipped_note)
};

// The log's line for the skipped files: how many, and the first few by path.
std::string skipped_note(const std::vector<std::string>& skipped);

// Official binary batches: records of 1 label byte + 3072 pixel bytes. A file
// whose size is not a multiple of 3073 is an error naming the file and both
// sizes.
ImageSet read_binary_batches(const std::vector<std::string>& files);

// Image folders <root>/<class>/*.png|jpg (classes sorted by name, files by
// name), each decoded by decode_image (image_decode.h): every image must be a
// 32×32 PNG or JPEG (the size is checked from the header before decoding).
// `root` may be a directory or an archive (.tar, .tar.gz, .tar.xz, .zip, ...:
// experiments/common/archive.h) holding <split>/<class>/... . Anything else
// under <split>/ (another kind of file, a file beside the class folders) is
// not read; its path is added to `skipped` when one is given.
ImageSet read_image_folder(const std::string& root, const std::string& split,
                           std::vector<std::string>* skipped = nullptr);

// Puts folder-ordered images back into the official order: walk the labels of
// batches 1..5 and take, for each, the next unused image of that class
// (see ../shared/data/README.md).
ImageSet restore_official_order(const ImageSet& by_class, const std::vector<std::string>& label_files);

// Procedural 32×32 images of 10 classes: each class is a family of oriented
// colour gratings with a class-specific blob; phase, position, contrast and
// pixel noise vary per image, deterministic by seed.
ImageSet synthetic(int64_t count, uint64_t seed);

// The splits for a --data argument:
//   ""                          synthetic train / valid (and no test)
//   dir with data_batch_*.bin   official batches; test_batch.bin if present
//   dir or archive with train/  image folders; test/ if present; the official
//                               order is restored when a labels/ directory
//                               sits beside the archive
// Without an official test set, the last `valid_size` training images (in
// official order, so all classes mix) are held out for validation.
Splits load_splits(const std::string& data, int64_t valid_size, int64_t synthetic_train, uint64_t seed);

// Keeps the first n images (for short runs).
ImageSet take(const ImageSet& set, int64_t n);

}  // namespace rg::cifar
