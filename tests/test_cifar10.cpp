// The CIFAR-10 experiment: readers (binary batches, image folders, the real
// data in ../shared/data when present), ZCA whitening, the ConvPool-CNN-C
// model with every norm, and the cifar10 driver end to end (training smoke
// test, exact resume, clear errors).
#include <doctest/doctest.h>
#include <stb/stb_image_write.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/cifar10/cifar_data.h"
#include "rmsgrad/experiments/cifar10/image_decode.h"
#include "rmsgrad/experiments/cifar10/zca.h"
#include "rmsgrad/models/convpool_cnn.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

using test::metric_lines;
using test::TempDir;

// Record i: label i % 10, pixel p = (i + p) % 256.
void write_records(const fs::path& file, int count, int extra_bytes = 0) {
  std::ofstream out(file, std::ios::binary);
  for (int i = 0; i < count; ++i) {
    out.put(static_cast<char>(i % 10));
    for (int p = 0; p < cifar::kPixels; ++p) out.put(static_cast<char>((i + p) % 256));
  }
  for (int i = 0; i < extra_bytes; ++i) out.put(0);
}

// Runs the driver; returns its exit code and leaves stdout+stderr in `output`.
int run_driver(const std::string& args, const fs::path& dir, std::string& output) {
  return test::run_program(RG_CIFAR10_BIN, args, dir, output);
}


}  // namespace

TEST_CASE("binary batches: records read back; a size that is not a multiple of 3073 names the file and sizes") {
  TempDir tmp("binary");
  write_records(tmp.path / "data_batch_1.bin", 3);
  cifar::ImageSet set = cifar::read_binary_batches({(tmp.path / "data_batch_1.bin").string()});
  REQUIRE(set.size() == 3);
  CHECK(set.labels == std::vector<int32_t>{0, 1, 2});
  CHECK(set.images.at({2, 0, 0, 0}) == 2.0f);        // record 2, pixel 0
  CHECK(set.images.at({1, 1, 0, 0}) == static_cast<float>((1 + 1024) % 256));  // record 1, green plane
  const std::string bad = (tmp.path / "bad.bin").string();
  write_records(bad, 2, 5);
  std::string message;
  try {
    cifar::read_binary_batches({bad});
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message.find("bad.bin") != std::string::npos);
  CHECK(message.find("6151") != std::string::npos);  // 2 records and 5 stray bytes
  CHECK(message.find("3073") != std::string::npos);
}

TEST_CASE("image folders: classes sorted by name, pixels as channel planes") {
  TempDir tmp("folder");
  const char* classes[] = {"truck", "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship"};
  for (int c = 0; c < 10; ++c) {
    fs::create_directories(tmp.path / "train" / classes[c]);
    std::vector<unsigned char> rgb(32 * 32 * 3);
    for (size_t p = 0; p < rgb.size(); ++p) rgb[p] = static_cast<unsigned char>((p + 7 * c) % 251);
    const std::string file = (tmp.path / "train" / classes[c] / "0000.png").string();
    REQUIRE(stbi_write_png(file.c_str(), 32, 32, 3, rgb.data(), 32 * 3) != 0);
  }
  cifar::ImageSet set = cifar::read_image_folder(tmp.path.string(), "train");
  REQUIRE(set.size() == 10);
  CHECK(set.labels == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  // Label 9 is "truck", written with c = 0: interleaved RGB (p = 3·pixel + ch)
  // becomes plane ch at pixel.
  CHECK(set.images.at({9, 0, 0, 1}) == static_cast<float>(3 % 251));
  CHECK(set.images.at({9, 2, 0, 1}) == static_cast<float>(5 % 251));
  CHECK(set.images.at({0, 1, 0, 0}) == static_cast<float>((1 + 7) % 251));  // airplane, c = 1, green
  CHECK_THROWS_WITH_AS(cifar::read_image_folder((tmp.path / "nothing").string(), "train"),
                       doctest::Contains("nothing"), Error);
  fs::remove_all(tmp.path / "train" / "ship");
  CHECK_THROWS_WITH_AS(cifar::read_image_folder(tmp.path.string(), "train"), doctest::Contains("9 class folders"),
                       Error);
}

TEST_CASE("image folders: every file that is not an image is skipped by name, and the driver's log names it") {
  TempDir tmp("skipped");
  for (int c = 0; c < 10; ++c) {
    const fs::path folder = tmp.path / "train" / fmt::format("c{}", c);
    fs::create_directories(folder);
    std::vector<unsigned char> rgb(32 * 32 * 3, static_cast<unsigned char>(20 * c));
    REQUIRE(stbi_write_png((folder / "0.png").string().c_str(), 32, 32, 3, rgb.data(), 32 * 3) != 0);
  }
  std::ofstream(tmp.path / "train" / "c3" / "notes.txt") << "not an image\n";
  std::ofstream(tmp.path / "train" / "c5" / "x.gif") << "GIF89a";
  std::ofstream(tmp.path / "train" / "readme.md") << "# beside the class folders\n";
  std::vector<std::string> skipped;
  CHECK(cifar::read_image_folder(tmp.path.string(), "train", &skipped).size() == 10);
  const std::string train = (tmp.path / "train").string();
  CHECK(skipped == std::vector<std::string>{train + "/c3/notes.txt", train + "/c5/x.gif", train + "/readme.md"});
  const std::string note = cifar::skipped_note(skipped);
  CHECK(note.find("skipped 3 files of the image folders, unread") != std::string::npos);
  CHECK(note.find(train + "/c5/x.gif") != std::string::npos);

  std::string output;
  const fs::path out = tmp.path / "run";
  REQUIRE_MESSAGE(run_driver("--data " + tmp.path.string() + " --valid-size 5 --batch 5 --steps 1 --width 0.1 "
                             "--zca off --out " + out.string(), tmp.path, output) == 0,
                  output);
  const std::string log = test::read_file(out / "train.log");
  CHECK_MESSAGE(log.find("skipped 3 files") != std::string::npos, log);
  for (const char* name : {"/c3/notes.txt", "/c5/x.gif", "/readme.md"})
    CHECK(log.find(train + name) != std::string::npos);
}

namespace {

// An image encoded by stb_image_write, as a file's bytes.
std::vector<unsigned char> encoded(bool jpeg, int channels, const std::vector<unsigned char>& pixels) {
  std::vector<unsigned char> out;
  auto append = [](void* context, void* data, int size) {
    auto* bytes = static_cast<std::vector<unsigned char>*>(context);
    bytes->insert(bytes->end(), static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + size);
  };
  const int ok = jpeg ? stbi_write_jpg_to_func(append, &out, 32, 32, channels, pixels.data(), 100)
                      : stbi_write_png_to_func(append, &out, 32, 32, channels, pixels.data(), 32 * channels);
  REQUIRE(ok != 0);
  return out;
}

// A 32×32 grey-as-RGB PNG written by hand, whose value at column x is 8x
// (stored in 16 bits as 8x · 257 when depth is 16), with a gAMA chunk when
// gamma (× 100,000) is not 0.
std::vector<unsigned char> ramp_png(int depth, uint32_t gamma) {
  auto be32 = [](std::vector<unsigned char>& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(v >> (24 - 8 * i)));
  };
  std::vector<unsigned char> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  auto chunk = [&](const char* type, const std::vector<unsigned char>& data) {
    be32(png, static_cast<uint32_t>(data.size()));
    std::vector<unsigned char> body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    png.insert(png.end(), body.begin(), body.end());
    be32(png, static_cast<uint32_t>(crc32(0L, body.data(), static_cast<uInt>(body.size()))));
  };
  std::vector<unsigned char> header;
  be32(header, 32);
  be32(header, 32);
  header.insert(header.end(), {static_cast<unsigned char>(depth), 2, 0, 0, 0});  // truecolour, no interlace
  chunk("IHDR", header);
  if (gamma != 0) {
    std::vector<unsigned char> g;
    be32(g, gamma);
    chunk("gAMA", g);
  }
  std::vector<unsigned char> raw;
  for (int y = 0; y < 32; ++y) {
    raw.push_back(0);  // filter: none
    for (int x = 0; x < 32; ++x)
      for (int c = 0; c < 3; ++c) {
        if (depth == 16) raw.push_back(static_cast<unsigned char>(8 * x));  // 8x · 257 = bytes (8x, 8x)
        raw.push_back(static_cast<unsigned char>(8 * x));
      }
  }
  uLongf packed_size = compressBound(raw.size());
  std::vector<unsigned char> packed(packed_size);
  REQUIRE(compress(packed.data(), &packed_size, raw.data(), raw.size()) == Z_OK);
  packed.resize(packed_size);
  chunk("IDAT", packed);
  chunk("IEND", {});
  return png;
}

std::string decode_error(const std::vector<unsigned char>& bytes) {
  std::vector<float> planes(cifar::kPixels);
  return test::error_of([&] { cifar::decode_image(bytes, "x", planes.data()); });
}

}  // namespace

TEST_CASE("decode_image: a JPEG close to its pixels, a PNG's stored values as RGB, anything else refused") {
  std::vector<float> planes(cifar::kPixels);
  // A smooth colour ramp at quality 100: stb_image_write then keeps chroma at
  // full resolution and quantizes every DCT coefficient with step 1, so the
  // decoded pixels differ from the source only by rounding — of the colour
  // transform on the way in and out and of the coefficients, under a level
  // each — and a ramp far from 0 and 255 is never clipped.
  std::vector<unsigned char> rgb(32 * 32 * 3);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x)
      for (int c = 0; c < 3; ++c) rgb[(y * 32 + x) * 3 + c] = static_cast<unsigned char>(40 + 3 * x + 2 * y + 20 * c);
  cifar::decode_image(encoded(true, 3, rgb), "ramp.jpg", planes.data());
  float worst = 0.0f;
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 32 * 32; ++p) worst = std::max(worst, std::fabs(planes[c * 1024 + p] - rgb[p * 3 + c]));
  CHECK(worst <= 3.0f);

  // Grey: three equal planes. RGBA: the colour as stored, the alpha dropped
  // (a transparent pixel keeps its colour, as PIL's convert("RGB") does).
  std::vector<unsigned char> grey(32 * 32), rgba(32 * 32 * 4);
  for (int p = 0; p < 32 * 32; ++p) {
    grey[p] = static_cast<unsigned char>(p % 256);
    for (int c = 0; c < 3; ++c) rgba[p * 4 + c] = static_cast<unsigned char>((p + 50 * c) % 256);
    rgba[p * 4 + 3] = static_cast<unsigned char>(p % 2 == 0 ? 0 : 255);
  }
  cifar::decode_image(encoded(false, 1, grey), "grey.png", planes.data());
  for (int c = 0; c < 3; ++c) CHECK(planes[c * 1024 + 300] == 300 % 256);
  cifar::decode_image(encoded(false, 4, rgba), "rgba.png", planes.data());
  for (int c = 0; c < 3; ++c) {
    CHECK(planes[c * 1024 + 300] == (300 + 50 * c) % 256);  // alpha 0
    CHECK(planes[c * 1024 + 301] == (301 + 50 * c) % 256);  // alpha 255
  }

  // The values a PNG stores, not a colour-managed view of them: a file tagged
  // linear (gAMA 1.0) is not re-encoded to sRGB, and 16 bits keep their high 8.
  for (const auto& [depth, gamma] : {std::pair{8, 0u}, {8, 100000u}, {16, 0u}, {16, 45455u}}) {
    CAPTURE(depth);
    CAPTURE(gamma);
    cifar::decode_image(ramp_png(depth, gamma), "ramp.png", planes.data());
    for (int x = 0; x < 32; ++x) CHECK(planes[2 * 1024 + 5 * 32 + x] == 8 * x);
  }

  const std::vector<unsigned char> jpeg = encoded(true, 3, rgb);
  CHECK(decode_error({jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() / 2)}).find("cannot decode image x")
        != std::string::npos);
  // Cut short: said as such, not as a 0×0 image or the decoder's own words.
  CHECK(decode_error({0xFF, 0xD8, 0xFF}).find("the JPEG is truncated or damaged (no image size in its 3 bytes)") !=
        std::string::npos);
  const std::vector<unsigned char> png = encoded(false, 3, rgb);
  CHECK(decode_error({png.begin(), png.begin() + 40}).find("the file is truncated") != std::string::npos);
  const std::vector<unsigned char> bmp = {'B', 'M', 0, 0, 0, 0};
  CHECK(decode_error(bmp).find("neither a PNG nor a JPEG") != std::string::npos);
  CHECK(decode_error(encoded(false, 3, rgb)) == "(no error)");
}

TEST_CASE("image folders: the official order from ../labels, with or without a trailing slash on --data") {
  TempDir tmp("official_order");
  // Two images per class, c0 … c9; the official order lists the labels 9, 8, …, 0, 9, 8, …, 0.
  for (int c = 0; c < 10; ++c) {
    fs::create_directories(tmp.path / "png" / "train" / ("c" + std::to_string(c)));
    for (int i = 0; i < 2; ++i) {
      std::vector<unsigned char> rgb(32 * 32 * 3, static_cast<unsigned char>(10 * c + i));
      const std::string file = (tmp.path / "png" / "train" / ("c" + std::to_string(c)) / (std::to_string(i) + ".png")).string();
      REQUIRE(stbi_write_png(file.c_str(), 32, 32, 3, rgb.data(), 32 * 3) != 0);
    }
  }
  fs::create_directories(tmp.path / "labels");
  for (int b = 1; b <= 5; ++b) {
    std::ofstream labels(tmp.path / "labels" / ("data_batch_" + std::to_string(b) + ".labels"), std::ios::binary);
    if (b <= 2)
      for (int c = 9; c >= 0; --c) labels << static_cast<char>(c);
  }
  for (const std::string& data : {(tmp.path / "png").string(), (tmp.path / "png").string() + "/"}) {
    CAPTURE(data);
    const cifar::Splits splits = cifar::load_splits(data, 5, 0, 1);
    CHECK(splits.description.find("official order restored") != std::string::npos);
    REQUIRE(splits.train.size() == 15);
    CHECK(splits.train.labels[0] == 9);
    CHECK(splits.train.labels[1] == 8);
    CHECK(splits.train.images.at({0, 0, 0, 0}) == 90.0f);  // c9's first image
  }
}

TEST_CASE("synthetic images: deterministic by seed, every class present") {
  cifar::ImageSet a = cifar::synthetic(200, 3), b = cifar::synthetic(200, 3), c = cifar::synthetic(200, 4);
  CHECK(max_abs_diff(a.images, b.images) == 0.0f);
  CHECK(a.labels == b.labels);
  CHECK(max_abs_diff(a.images, c.images) > 0.0f);
  std::vector<int> counts(10, 0);
  for (int32_t label : a.labels) counts.at(label)++;
  for (int n : counts) CHECK(n > 0);
}

TEST_CASE("the real CIFAR-10 binary prefixes in ../shared/data, when present") {
  const fs::path dir = fs::path(RG_SHARED_DATA_DIR) / "cifar10" / "cifar-10-batches-bin-prefix";
  if (!fs::exists(dir / "data_batch_1.bin")) {
    MESSAGE("skipped: " << dir.string() << " does not exist (a fresh clone without ../shared/data)");
    return;
  }
  cifar::ImageSet set = cifar::read_binary_batches({(dir / "data_batch_1.bin").string()});
  CHECK(set.size() == 1102);
  std::ifstream labels(fs::path(RG_SHARED_DATA_DIR) / "cifar10" / "labels" / "data_batch_1.labels", std::ios::binary);
  for (int64_t i = 0; i < set.size(); ++i) CHECK(set.labels[i] == labels.get());
}

TEST_CASE("the real CIFAR-10 JPEG archive in ../shared/data, when present: every image decodes, in official order") {
  const fs::path data = fs::path(RG_SHARED_DATA_DIR) / "cifar10";
  const fs::path archive = data / "cifar10-train-jpeg.tar.gz", batch = data / "cifar-10-batches-bin-prefix" / "data_batch_1.bin";
  if (!fs::exists(archive) || !fs::exists(batch)) {
    MESSAGE("skipped: " << archive.string() << " or " << batch.string()
                        << " does not exist (a fresh clone without ../shared/data)");
    return;
  }
  // The strict JPEG reader (a warning is an error) refuses none of the 50,000.
  const cifar::Splits splits = cifar::load_splits(archive.string(), 5000, 0, 1);
  REQUIRE(splits.train.size() == 45000);
  REQUIRE(splits.valid.size() == 5000);
  // The first 1,102 images in official order are the binary prefix's records,
  // lossless: each decoded JPEG must be nearer its own record than the next
  // one (JPEG's loss is a few levels per value; two CIFAR-10 images differ by
  // tens), and its label the record's.
  const cifar::ImageSet exact = cifar::read_binary_batches({batch.string()});
  auto distance = [&](int64_t jpeg, int64_t record) {
    double sum = 0.0;
    for (int64_t v = 0; v < cifar::kPixels; ++v)
      sum += std::fabs(splits.train.images.data()[jpeg * cifar::kPixels + v] -
                       exact.images.data()[record * cifar::kPixels + v]);
    return sum / cifar::kPixels;
  };
  int64_t nearer = 0;
  double own = 0.0, next = 0.0;
  for (int64_t i = 0; i < exact.size(); ++i) {
    CHECK(splits.train.labels[i] == exact.labels[i]);
    const double d_own = distance(i, i), d_next = distance(i, (i + 1) % exact.size());
    nearer += d_own < d_next;
    own += d_own / exact.size();
    next += d_next / exact.size();
  }
  MESSAGE("mean |JPEG − its record| " << own << ", − the next record " << next << " levels");
  CHECK(nearer == exact.size());
}

TEST_CASE("ZCA whitening: the whitened training rows have identity covariance") {
  // Correlated data: x = z A with z ~ N(0, I), D = 12.
  const int64_t n = 2000, d = 12;
  Generator gen(5);
  Tensor z = normal(Shape{n, d}, 0.0f, 1.0f, gen), a = normal(Shape{d, d}, 0.0f, 1.0f, gen);
  Tensor rows = Tensor::zeros(Shape{n, d});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k)
      for (int64_t j = 0; j < d; ++j) rows.data()[i * d + j] += z.data()[i * d + k] * a.data()[k * d + j] + 3.0f;
  cifar::Zca zca = cifar::fit_zca(rows);
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j) CHECK(zca.transform.at({i, j}) == doctest::Approx(zca.transform.at({j, i})));
  cifar::apply_zca(zca, rows);
  // Covariance of the result: I up to reg/λ (λ ≳ 0.01 here, so ≤ 1e-3) and
  // float32 rounding of the products (≈1e-6 relative); 2e-3 bounds both.
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j) {
      double c = 0.0;
      for (int64_t r = 0; r < n; ++r) c += static_cast<double>(rows.data()[r * d + i]) * rows.data()[r * d + j];
      CHECK(std::fabs(c / n - (i == j ? 1.0 : 0.0)) <= 2e-3);
    }
}

TEST_CASE("ZCA cache: a file whose shapes or values do not fit is refused by name, never used") {
  const int64_t n = 50, d = 6;
  Generator gen(2);
  const Tensor rows = normal(Shape{n, d}, 0.0f, 1.0f, gen);
  const fs::path cache = fs::temp_directory_path() / ("rg_zca_cache_" + std::to_string(::getpid()));
  fs::remove_all(cache);
  std::string log;
  cifar::fit_zca_cached(rows, cache.string(), log);
  REQUIRE(log.find("fitted and cached in") != std::string::npos);
  fs::path file;
  for (const auto& entry : fs::directory_iterator(cache)) file = entry.path();
  const cifar::Zca good = cifar::fit_zca(rows);
  auto write_cache = [&](const Tensor& mean, const Tensor& transform) {
    Checkpoint c;
    c.add("mean", mean);
    c.add("transform", transform);
    save_checkpoint(file.string(), c);
  };
  write_cache(good.mean, Tensor::zeros(Shape{d, d - 1}));  // the right mean, a transform of another size
  test::check_error([&] { cifar::fit_zca_cached(rows, cache.string(), log); }, file.string(),
                    "a transform of shape [6, 5], this data needs [6] and [6, 6]");
  Tensor poisoned = good.transform.clone();
  poisoned.data()[7] = NAN;
  write_cache(good.mean, poisoned);
  test::check_error([&] { cifar::fit_zca_cached(rows, cache.string(), log); }, file.string(), "is not finite (nan)");
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "torn";
  test::check_error([&] { cifar::fit_zca_cached(rows, cache.string(), log); }, "zca: the cache file cannot be read",
                    "delete it to fit afresh");
  write_cache(good.mean, good.transform);
  cifar::fit_zca_cached(rows, cache.string(), log);
  CHECK(log.find("loaded from cache") != std::string::npos);
  fs::remove_all(cache);
}

TEST_CASE("ConvPool-CNN-C: every norm gives logits; biases dropped where a norm has its own") {
  Generator data_gen(1);
  Tensor images = normal(Shape{4, 3, 32, 32}, 0.0f, 1.0f, data_gen);
  for (const char* name : {"none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "batchnorm", "weightnorm"}) {
    CAPTURE(name);
    ConvPoolCnnOptions options;
    options.norm.kind = parse_norm_kind(name);
    options.norm.p = 0.125f;
    options.width = 0.125;
    Generator init(2), noise(3);
    ConvPoolCnnC model(options, init, noise);
    if (options.norm.kind == NormKind::WeightNorm) model.init_weight_norm(images);
    Var logits = model(constant(images));
    CHECK(logits.shape() == Shape{4, 10});
    Var loss = cross_entropy(logits, Indices({0, 1, 2, 3}));
    loss.backward();
    CHECK(std::isfinite(loss.item()));
    bool has_conv_bias = false;
    for (const auto& [n, p] : model.named_parameters()) {
      has_conv_bias |= n == "conv1.bias";
      CHECK_MESSAGE(p.has_grad(), n << " got no gradient");
    }
    const bool keeps_bias = options.norm.kind == NormKind::None || options.norm.kind == NormKind::WeightNorm;
    CHECK(has_conv_bias == keeps_bias);
    tape().clear();
  }
}

TEST_CASE("weightnorm's data-dependent init whitens the first layer's output on the batch") {
  Generator data_gen(1);
  Tensor images = normal(Shape{16, 3, 32, 32}, 0.0f, 1.0f, data_gen);
  ConvPoolCnnOptions options;
  options.norm.kind = NormKind::WeightNorm;
  options.width = 0.125;
  Generator init(2), noise(3);
  ConvPoolCnnC model(options, init, noise);
  model.init_weight_norm(images);
  NoGradGuard no_grad;
  // conv1 is the first submodule after the noise: find it by name.
  Var g, v, b;
  for (const auto& [n, p] : model.named_parameters()) {
    if (n == "conv1.weight_v") v = p;
    if (n == "conv1.weight_g") g = p;
    if (n == "conv1.bias") b = p;
  }
  REQUIRE((g.defined() && v.defined() && b.defined()));
  Var y = conv2d(constant(images), weight_norm(v, g), b, 1, 1);  // [16, 12, 32, 32]
  const int64_t channels = y.dim(1), per = y.dim(2) * y.dim(3);
  for (int64_t c = 0; c < channels; ++c) {
    double s = 0.0, sq = 0.0;
    for (int64_t i = 0; i < y.dim(0); ++i)
      for (int64_t k = 0; k < per; ++k) {
        const double x = y.value().data()[(i * channels + c) * per + k];
        s += x;
        sq += x * x;
      }
    const double count = static_cast<double>(y.dim(0) * per), mean = s / count;
    CHECK(mean == doctest::Approx(0.0).scale(1).epsilon(1e-4));
    CHECK(sq / count - mean * mean == doctest::Approx(1.0).epsilon(1e-3));
  }
}

TEST_CASE("cifar10 driver: training lowers the loss, and --resume repeats the losses bit for bit") {
  TempDir tmp("driver");
  const std::string common = "--norm rmsnorm --width 0.125 --train-size 200 --valid-size 100 --batch 50 --zca off "
                             "--threads 1 --log-every 1 --seed 4 --steps 12";
  std::string output;
  const fs::path straight = tmp.path / "straight", resumed = tmp.path / "resumed";
  REQUIRE_MESSAGE(run_driver(common + " --out " + straight.string(), tmp.path, output) == 0, output);
  std::vector<nlohmann::json> train = metric_lines(straight, "train"), valid = metric_lines(straight, "valid");
  REQUIRE(train.size() == 12);
  REQUIRE(valid.size() == 4);  // step 0 and the end of each of the 3 epochs (4 steps each)
  for (const auto& line : train) CHECK(line["sec_per_1k_steps"].is_number());
  CHECK(valid.back()["error_pct"].is_number());
  double first = 0.0, last = 0.0;
  for (int i = 0; i < 4; ++i) first += train[i]["loss"].get<double>(), last += train[8 + i]["loss"].get<double>();
  CHECK(last < first);  // the last epoch's mean loss is below the first's

  // Interrupted after step 6 (the checkpoint is from step 4), then resumed.
  REQUIRE_MESSAGE(run_driver(common + " --stop-after 6 --out " + resumed.string(), tmp.path, output) == 0, output);
  REQUIRE_MESSAGE(run_driver(common + " --resume --out " + resumed.string(), tmp.path, output) == 0, output);
  std::vector<nlohmann::json> again = metric_lines(resumed, "train");
  REQUIRE(again.size() == train.size());
  for (size_t i = 0; i < train.size(); ++i) {
    CHECK(again[i]["step"] == train[i]["step"]);
    CHECK_MESSAGE(again[i]["loss"].get<double>() == train[i]["loss"].get<double>(), "step " << i + 1);
  }
  std::vector<nlohmann::json> valid_again = metric_lines(resumed, "valid");
  REQUIRE(valid_again.size() == valid.size());
  CHECK(valid_again.back()["error_pct"] == valid.back()["error_pct"]);
}

TEST_CASE("cifar10 driver: bad input is one clear error and a non-zero exit") {
  TempDir tmp("errors");
  std::string output;
  CHECK(run_driver("--data " + (tmp.path / "no-such-dir").string() + " --out " + (tmp.path / "r").string(), tmp.path,
                   output) == 1);
  CHECK(output.find("no-such-dir") != std::string::npos);
  CHECK(output.find("does not exist") != std::string::npos);
  CHECK(run_driver("--no-such-flag", tmp.path, output) == 2);
  CHECK(output.find("--no-such-flag") != std::string::npos);
  CHECK(run_driver("--norm groupnorm", tmp.path, output) == 2);
  write_records(tmp.path / "data_batch_1.bin", 2, 1);
  CHECK(run_driver("--data " + tmp.path.string() + " --out " + (tmp.path / "r2").string(), tmp.path, output) == 1);
  CHECK(output.find("3073") != std::string::npos);
}
