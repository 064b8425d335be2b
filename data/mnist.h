#pragma once
// MNIST in its original IDX files (LeCun et al. 1998), gzipped or not:
//
//   images  magic 0x00000803, then N, rows, cols as big-endian int32, then
//           N·rows·cols pixel bytes, row by row
//   labels  magic 0x00000801, then N, then N label bytes (0–9)
//
//   rg::LabelledTensors test = rg::read_mnist("t10k-images-idx3-ubyte.gz",
//                                             "t10k-labels-idx1-ubyte.gz");
//   // test.inputs [10000, 784], pixels scaled to [0, 1]; test.labels 10000 classes
//
// Refused with an rg::Error naming the file: a wrong magic number, sizes
// that are zero or larger than the file can hold, fewer bytes than the header
// promises, bytes after them, a label outside 0–9, and image and label files
// of different lengths. Nothing is allocated for what the header claims before
// the bytes are there.
#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/data/loader.h"

namespace rg {

// Images [N, rows · cols], scaled to [0, 1], and their labels.
LabelledTensors read_mnist(const std::string& images_path, const std::string& labels_path);

// The two files on their own: images as [N, rows, cols] bytes, labels as bytes.
struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;
};
IdxImages read_idx_images(const std::string& path);
std::vector<uint8_t> read_idx_labels(const std::string& path);

}  // namespace rg
