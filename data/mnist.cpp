#include "rmsgrad/data/mnist.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <array>
#include <memory>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

constexpr uint32_t kImagesMagic = 0x00000803, kLabelsMagic = 0x00000801;
// MNIST itself has 60,000 images of 28 × 28; the bounds only keep a damaged
// header from asking for absurd sizes before any byte is read.
constexpr int64_t kMaxSide = 4096;

// An IDX file's bytes, read through zlib, which reads gzip and plain files
// alike. The buffer grows with the data actually read, never with what a
// header claims.
class IdxReader {
 public:
  explicit IdxReader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb"), &gzclose) {
    check(file_ != nullptr, "{}: cannot open the file: {}", path, std::strerror(errno));
  }

  uint32_t big_endian_u32(const char* what) {
    std::array<uint8_t, 4> b{};
    check(read(b.data(), 4) == 4, "{}: the file ends inside its header (reading {})", path_, what);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  }

  // Exactly `count` more bytes, then the end of the file.
  std::vector<uint8_t> body(int64_t count, const char* what) {
    std::vector<uint8_t> out;
    constexpr size_t kChunk = size_t{1} << 20;
    while (static_cast<int64_t>(out.size()) < count) {
      const size_t want = std::min(kChunk, static_cast<size_t>(count) - out.size());
      const size_t old = out.size();
      out.resize(old + want);
      const size_t got = read(out.data() + old, want);
      out.resize(old + got);
      check(got == want, "{}: the header promises {} bytes of {}, the file holds {}", path_, count, what,
            out.size());
    }
    uint8_t extra = 0;
    check(read(&extra, 1) == 0, "{}: there are bytes after the {} {} the header announces", path_, count, what);
    return out;
  }

 private:
  size_t read(uint8_t* out, size_t count) {
    const int got = gzread(file_.get(), out, static_cast<unsigned>(count));
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file_.get(), &code);
      throw Error(fmt::format("{}: cannot read the file: {}", path_, message ? message : "zlib error"));
    }
    return static_cast<size_t>(got);
  }

  std::string path_;
  std::unique_ptr<gzFile_s, decltype(&gzclose)> file_;
};

int64_t checked_size(uint32_t value, int64_t limit, const std::string& path, const char* what) {
  check(value > 0 && value <= limit, "{}: the header's {} is {}, which is not in [1, {}]", path, what, value, limit);
  return static_cast<int64_t>(value);
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  IdxReader reader(path);
  const uint32_t magic = reader.big_endian_u32("the magic number");
  check(magic == kImagesMagic, "{}: not an IDX image file (magic number {:#010x}, expected {:#010x})", path, magic,
        kImagesMagic);
  IdxImages images;
  images.count = checked_size(reader.big_endian_u32("the image count"), int64_t{1} << 31, path, "image count");
  images.rows = checked_size(reader.big_endian_u32("the row count"), kMaxSide, path, "row count");
  images.cols = checked_size(reader.big_endian_u32("the column count"), kMaxSide, path, "column count");
  images.pixels = reader.body(images.count * images.rows * images.cols, "pixels");
  return images;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  IdxReader reader(path);
  const uint32_t magic = reader.big_endian_u32("the magic number");
  check(magic == kLabelsMagic, "{}: not an IDX label file (magic number {:#010x}, expected {:#010x})", path, magic,
        kLabelsMagic);
  const int64_t count = checked_size(reader.big_endian_u32("the label count"), int64_t{1} << 31, path, "label count");
  std::vector<uint8_t> labels = reader.body(count, "labels");
  for (size_t i = 0; i < labels.size(); ++i)
    check(labels[i] <= 9, "{}: label {} is {}, not a digit 0–9", path, i, labels[i]);
  return labels;
}

LabelledTensors read_mnist(const std::string& images_path, const std::string& labels_path) {
  const IdxImages images = read_idx_images(images_path);
  const std::vector<uint8_t> labels = read_idx_labels(labels_path);
  check(static_cast<int64_t>(labels.size()) == images.count, "{} holds {} images but {} holds {} labels", images_path,
        images.count, labels_path, labels.size());
  LabelledTensors out;
  out.inputs = Tensor::empty(Shape{images.count, images.rows * images.cols});
  float* x = out.inputs.data();
  for (size_t i = 0; i < images.pixels.size(); ++i) x[i] = static_cast<float>(images.pixels[i]) * (1.0f / 255.0f);
  out.labels.assign(labels.begin(), labels.end());
  return out;
}

}  // namespace rg
