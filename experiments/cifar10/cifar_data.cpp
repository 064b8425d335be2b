#include "rmsgrad/experiments/cifar10/cifar_data.h"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/cifar10/image_decode.h"
#include "rmsgrad/experiments/common/archive.h"
#include "rmsgrad/experiments/common/file_status.h"

namespace rg::cifar {

namespace fs = std::filesystem;

namespace {

std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cifar10: cannot open {}: {}", path, std::strerror(errno));
  // Block reads: copying through istreambuf_iterator took a call per byte,
  // most of the time of reading a small image (seen profiling the image_folder
  // fuzzer, where it ran for every input).
  std::vector<unsigned char> bytes;
  char block[1 << 16];
  while (in.read(block, sizeof(block)) || in.gcount() > 0) bytes.insert(bytes.end(), block, block + in.gcount());
  return bytes;
}

bool is_image_name(const std::string& name) {
  std::string ext = fs::path(name).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

// An image file of a folder, read whole after its size is checked (from the
// open file, not a separate stat).
std::vector<unsigned char> read_image_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  check(in.good(), "cifar10: cannot open {}: {}", path, std::strerror(errno));
  const auto size = static_cast<uint64_t>(in.tellg());
  check(size <= kMaxImageFileBytes, "cifar10: image {} has {} bytes, more than a 32×32 image needs", path, size);
  std::vector<unsigned char> bytes(size);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  check(in.gcount() == static_cast<std::streamsize>(size), "cifar10: cannot read {}", path);
  return bytes;
}

// One image of a split: a file in a folder, read when it is decoded, or an
// archive member, whose bytes were read with the rest of the archive (an
// archive is a stream, read in one pass). So a folder of 50,000 images is
// never held encoded all at once, and its first bad image ends the read.
struct ImageSource {
  std::string path;
  std::vector<unsigned char> bytes;
};

// (class name, file name) → image, for one split; the map's order is the
// order the images are labelled and stored in.
using SplitImages = std::map<std::pair<std::string, std::string>, ImageSource>;

// The images of a split, and in `skipped` every other file under its folder,
// by path ("<root>:<member>" in an archive), so that none goes unsaid.
SplitImages collect_split(const std::string& root, const std::string& split, std::vector<std::string>& skipped) {
  SplitImages files;
  if (is_file(root)) {
    // <split>/<class>/<file>; every other member is skipped unread, whatever its size.
    auto parts_of = [&](const std::string& name) {
      const fs::path p(name);
      std::vector<std::string> parts(p.begin(), p.end());
      return parts.size() == 3 && parts[0] == split && is_image_name(name) ? parts : std::vector<std::string>{};
    };
    auto keep = [&](const std::string& name, std::vector<unsigned char>& bytes) {
      const std::vector<std::string> parts = parts_of(name);
      files[{parts[1], parts[2]}] = ImageSource{{}, std::move(bytes)};
    };
    auto wanted = [&](const std::string& name) {
      const bool image = !parts_of(name).empty();
      if (!image && name.rfind(split + "/", 0) == 0) skipped.push_back(root + ":" + name);
      return image;
    };
    for_each_archive_file(root, keep, kMaxImageFileBytes, wanted);
  } else {
    const fs::path dir = fs::path(root) / split;
    if (!is_folder(dir)) return files;
    // is_directory and is_regular_file of a directory entry use the type the
    // directory listing gave, without a stat per file.
    std::error_code ec;
    for (const fs::directory_entry& cls : entries_of(dir)) {
      if (!cls.is_directory(ec)) {
        skipped.push_back(cls.path().string());
        continue;
      }
      for (const fs::directory_entry& f : entries_of(cls.path())) {
        if (f.is_regular_file(ec) && is_image_name(f.path().string()))
          files[{cls.path().filename().string(), f.path().filename().string()}] = ImageSource{f.path().string(), {}};
        else
          skipped.push_back(f.path().string());
      }
    }
  }
  std::sort(skipped.begin(), skipped.end());
  return files;
}

}  // namespace

ImageSet read_binary_batches(const std::vector<std::string>& files) {
  std::vector<unsigned char> all;
  for (const std::string& file : files) {
    check(path_exists(file), "cifar10: data file {} does not exist", file);
    std::vector<unsigned char> bytes = read_file(file);
    check(bytes.size() % kRecordBytes == 0,
          "cifar10: {} has {} bytes, not a multiple of the {}-byte record size (1 label + 3072 pixels)", file,
          bytes.size(), kRecordBytes);
    check(!bytes.empty(), "cifar10: {} is empty", file);
    for (size_t r = 0; r < bytes.size(); r += kRecordBytes)
      check(bytes[r] < kClasses, "cifar10: {}: record {} has label {}, expected 0..9", file, r / kRecordBytes,
            int(bytes[r]));
    all.insert(all.end(), bytes.begin(), bytes.end());
  }
  const int64_t count = static_cast<int64_t>(all.size()) / kRecordBytes;
  ImageSet set{Tensor::empty(Shape{count, kChannels, kSide, kSide}), std::vector<int32_t>(count)};
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char* record = all.data() + i * kRecordBytes;
    set.labels[i] = record[0];
    float* out = set.images.data() + i * kPixels;
    for (int64_t p = 0; p < kPixels; ++p) out[p] = record[1 + p];
  }
  return set;
}

ImageSet read_image_folder(const std::string& root, const std::string& split, std::vector<std::string>* skipped) {
  check(path_exists(root), "cifar10: data path {} does not exist", root);
  std::vector<std::string> not_images;
  SplitImages files = collect_split(root, split, not_images);
  if (skipped != nullptr) skipped->insert(skipped->end(), not_images.begin(), not_images.end());
  check(!files.empty(), "cifar10: no images under {}/{}/<class>/", root, split);
  std::vector<std::string> classes;
  for (const auto& [key, _] : files)
    if (classes.empty() || classes.back() != key.first) classes.push_back(key.first);
  if (static_cast<int64_t>(classes.size()) != kClasses) {
    constexpr size_t kShown = 12;
    std::vector<std::string> shown(classes.begin(), classes.begin() + std::min(classes.size(), kShown));
    throw Error(fmt::format("cifar10: {}{}{} has {} class folders with images ({}{}), expected 10", root,
                            is_file(root) ? ":" : "/", split, classes.size(),
                            fmt::join(shown, ", "),
                            classes.size() > kShown ? fmt::format(" and {} more", classes.size() - kShown) : ""));
  }
  const int64_t count = static_cast<int64_t>(files.size());
  ImageSet set{Tensor::empty(Shape{count, kChannels, kSide, kSide}), std::vector<int32_t>(count)};
  int64_t i = 0;
  for (auto& [key, image] : files) {  // map order: class, then file name
    const auto cls = std::find(classes.begin(), classes.end(), key.first) - classes.begin();
    set.labels[i] = static_cast<int32_t>(cls);
    if (!image.path.empty()) image.bytes = read_image_file(image.path);
    // An archive's member as archive:member, a folder's file as its path.
    decode_image(image.bytes, root + (is_file(root) ? ":" : "/") + split + "/" + key.first + "/" + key.second,
                 set.images.data() + i * kPixels);
    image.bytes = {};  // freed as soon as it is decoded
    ++i;
  }
  return set;
}

std::string skipped_note(const std::vector<std::string>& skipped) {
  constexpr size_t kShown = 5;
  const std::vector<std::string> shown(skipped.begin(), skipped.begin() + std::min(skipped.size(), kShown));
  return fmt::format("cifar10: skipped {} file{} of the image folders, unread (the images are the regular .png, "
                     ".jpg and .jpeg files in the class folders): {}{}", skipped.size(), skipped.size() == 1 ? "" : "s",
                     fmt::join(shown, ", "),
                     skipped.size() > kShown ? fmt::format(" and {} more", skipped.size() - kShown) : "");
}

ImageSet restore_official_order(const ImageSet& by_class, const std::vector<std::string>& label_files) {
  std::vector<int32_t> order_labels;
  for (const std::string& f : label_files)
    for (unsigned char b : read_file(f)) order_labels.push_back(b);
  check(static_cast<int64_t>(order_labels.size()) == by_class.size(),
        "cifar10: the label files list {} images, the folders hold {}", order_labels.size(), by_class.size());
  std::vector<int64_t> first_of_class(kClasses + 1, 0);  // images are grouped by class
  for (int32_t label : by_class.labels) ++first_of_class[label + 1];
  for (int64_t c = 0; c < kClasses; ++c) first_of_class[c + 1] += first_of_class[c];
  std::vector<int64_t> next = first_of_class;
  ImageSet out{Tensor::empty(by_class.images.shape()), order_labels};
  for (size_t i = 0; i < order_labels.size(); ++i) {
    const int32_t c = order_labels[i];
    check(c >= 0 && c < kClasses && next[c] < first_of_class[c + 1], "cifar10: label files do not match the folders");
    std::memcpy(out.images.data() + i * kPixels, by_class.images.data() + next[c]++ * kPixels, sizeof(float) * kPixels);
  }
  return out;
}

ImageSet synthetic(int64_t count, uint64_t seed) {
  Generator gen(seed);
  ImageSet set{Tensor::empty(Shape{count, kChannels, kSide, kSide}), std::vector<int32_t>(count)};
  // Class c: a grating at angle c·18°, frequency 2 + c % 3 cycles, a colour
  // tint per class, and a bright blob in one of four quadrants.
  for (int64_t i = 0; i < count; ++i) {
    const int32_t c = static_cast<int32_t>(gen.randint(kClasses));
    set.labels[i] = c;
    const float angle = static_cast<float>(c) * 0.314159f + gen.uniform(-0.15f, 0.15f);
    const float freq = (2.0f + c % 3) * 2.0f * 3.14159265f / kSide;
    const float phase = gen.uniform(0.0f, 6.2831853f), contrast = gen.uniform(40.0f, 90.0f);
    const float blob_x = (c % 2 ? 22.0f : 10.0f) + gen.uniform(-3, 3), blob_y = (c / 2 % 2 ? 22.0f : 10.0f) + gen.uniform(-3, 3);
    const float tint[3] = {0.6f + 0.4f * ((c * 37) % 10) / 10.0f, 0.6f + 0.4f * ((c * 53) % 10) / 10.0f,
                           0.6f + 0.4f * ((c * 71) % 10) / 10.0f};
    float* out = set.images.data() + i * kPixels;
    for (int64_t y = 0; y < kSide; ++y)
      for (int64_t x = 0; x < kSide; ++x) {
        const float u = std::cos(angle) * x + std::sin(angle) * y;
        const float wave = std::sin(freq * u + phase);
        const float d2 = (x - blob_x) * (x - blob_x) + (y - blob_y) * (y - blob_y);
        const float blob = 60.0f * std::exp(-d2 / 18.0f);
        for (int64_t ch = 0; ch < kChannels; ++ch) {
          float v = 127.5f + tint[ch] * contrast * wave + blob + gen.normal(0.0f, 12.0f);
          out[ch * kSide * kSide + y * kSide + x] = std::clamp(v, 0.0f, 255.0f);
        }
      }
  }
  return set;
}

ImageSet take(const ImageSet& set, int64_t n) {
  n = std::min(n, set.size());
  ImageSet out{Tensor::empty(Shape{n, kChannels, kSide, kSide}), {set.labels.begin(), set.labels.begin() + n}};
  std::memcpy(out.images.data(), set.images.data(), sizeof(float) * n * kPixels);
  return out;
}

namespace {

ImageSet slice_set(const ImageSet& set, int64_t begin, int64_t end) {
  ImageSet out{Tensor::empty(Shape{end - begin, kChannels, kSide, kSide}),
               {set.labels.begin() + begin, set.labels.begin() + end}};
  std::memcpy(out.images.data(), set.images.data() + begin * kPixels, sizeof(float) * (end - begin) * kPixels);
  return out;
}

// Holds out the last `valid_size` images as validation.
void hold_out(Splits& s, const ImageSet& all, int64_t valid_size) {
  check(all.size() > valid_size, "cifar10: {} training images cannot spare {} for validation", all.size(), valid_size);
  s.train = slice_set(all, 0, all.size() - valid_size);
  s.valid = slice_set(all, all.size() - valid_size, all.size());
}

}  // namespace

Splits load_splits(const std::string& data, int64_t valid_size, int64_t synthetic_train, uint64_t seed) {
  Splits s;
  if (data.empty()) {
    s.train = synthetic(synthetic_train, seed);
    s.valid = synthetic(std::max<int64_t>(valid_size, 1), seed + 1);
    s.description = fmt::format("synthetic gratings: {} train, {} valid (no test)", s.train.size(), s.valid.size());
    return s;
  }
  check(path_exists(data), "cifar10: data path {} does not exist", data);
  const bool folder_of_data = is_folder(data);
  if (folder_of_data && path_exists(fs::path(data) / "data_batch_1.bin")) {
    std::vector<std::string> files;
    for (int b = 1; b <= 5; ++b) {
      fs::path f = fs::path(data) / fmt::format("data_batch_{}.bin", b);
      if (path_exists(f)) files.push_back(f.string());
    }
    hold_out(s, read_binary_batches(files), valid_size);
    fs::path test = fs::path(data) / "test_batch.bin";
    if (path_exists(test)) s.test = read_binary_batches({test.string()});
    s.description = fmt::format("binary batches in {}: {} train, {} valid (last of the official order), {} test", data,
                                s.train.size(), s.valid.size(), s.test.size());
    return s;
  }
  ImageSet all = read_image_folder(data, "train", &s.skipped);
  // "cifar/png/" names the same folder as "cifar/png": its parent holds labels/.
  fs::path folder = fs::path(data).lexically_normal();
  if (!folder.has_filename()) folder = folder.parent_path();
  fs::path labels = folder.parent_path() / "labels";
  std::string order = "folder order";
  if (path_exists(labels / "data_batch_1.labels")) {
    std::vector<std::string> files;
    for (int b = 1; b <= 5; ++b) files.push_back((labels / fmt::format("data_batch_{}.labels", b)).string());
    all = restore_official_order(all, files);
    order = "official order restored from " + labels.string();
  } else {
    // Without the official order, a seeded permutation mixes the classes.
    Generator gen(seed);
    std::vector<int64_t> perm(all.size());
    for (int64_t i = 0; i < all.size(); ++i) perm[i] = i;
    for (int64_t i = all.size() - 1; i > 0; --i) std::swap(perm[i], perm[gen.randint(i + 1)]);
    ImageSet shuffled{Tensor::empty(all.images.shape()), std::vector<int32_t>(all.size())};
    for (int64_t i = 0; i < all.size(); ++i) {
      shuffled.labels[i] = all.labels[perm[i]];
      std::memcpy(shuffled.images.data() + i * kPixels, all.images.data() + perm[i] * kPixels, sizeof(float) * kPixels);
    }
    all = shuffled;
    order = "seeded shuffle of the folders";
  }
  hold_out(s, all, valid_size);
  const bool has_test = folder_of_data && is_folder(fs::path(data) / "test");
  if (has_test) s.test = read_image_folder(data, "test", &s.skipped);
  s.description = fmt::format("image folders in {} ({}): {} train, {} valid, {} test", data, order, s.train.size(),
                              s.valid.size(), s.test.size());
  return s;
}

}  // namespace rg::cifar
