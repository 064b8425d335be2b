// Archives through libarchive (experiments/common/archive.h): every format
// --data takes gives the same files, a file over the size limit and a damaged
// archive are clear errors, and the CIFAR-10 image reader takes each format.
#include <doctest/doctest.h>
#include <stb/stb_image_write.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "archive_maker.h"
#include "rmsgrad/experiments/cifar10/cifar_data.h"
#include "rmsgrad/experiments/common/archive.h"
#include "test_util.h"

using namespace rg;
using test::Members;

namespace {

std::string png32(unsigned char shade) {
  std::vector<unsigned char> pixels(32 * 32 * 3, shade);
  std::string out;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  REQUIRE(stbi_write_png_to_func(append, &out, 32, 32, 3, pixels.data(), 32 * 3) != 0);
  return out;
}

std::map<std::string, std::string> read_all(const std::string& path, uint64_t limit = uint64_t{1} << 30) {
  std::map<std::string, std::string> files;
  for_each_archive_file(
      path, [&](const std::string& name, std::vector<unsigned char>& bytes) { files[name] = {bytes.begin(), bytes.end()}; },
      limit);
  return files;
}

}  // namespace

TEST_CASE("archive: tar, tar.gz, tar.xz and zip give the same files, in memory and from a file") {
  test::TempDir tmp("archive_formats");
  const Members members = {{"a/one.txt", "first file\n"}, {"a/b/two.bin", std::string("\0\1\2\3", 4)}, {"empty", ""}};
  for (const std::string kind : {"tar", "tar.gz", "tar.xz", "zip"}) {
    CAPTURE(kind);
    const std::string bytes = test::make_archive(kind, members);
    const std::string path = tmp.write("data." + kind, "");
    std::ofstream(path, std::ios::binary) << bytes;
    const auto files = read_all(path);
    REQUIRE(files.size() == 3);
    for (const auto& [name, content] : members) CHECK(files.at(name) == content);
    int count = 0;
    for_each_archive_file_in_memory(bytes.data(), bytes.size(), "memory",
                                    [&](const std::string&, std::vector<unsigned char>&) { ++count; });
    CHECK(count == 3);
  }
}

TEST_CASE("archive: a file over the limit, a damaged archive and a non-archive are errors naming the archive") {
  test::TempDir tmp("archive_errors");
  const std::string big = tmp.write("big.tar", "");
  std::ofstream(big, std::ios::binary) << test::make_archive("tar", {{"big.bin", std::string(5000, 'x')}});
  test::check_error([&] { read_all(big, 4096); }, "big.tar", "'big.bin' in the archive is larger than 4096 bytes");
  CHECK(read_all(big, 5000).at("big.bin").size() == 5000);

  const std::string whole = test::make_archive("tar.gz", {{"a.txt", std::string(100000, 'y')}});
  const std::string torn = tmp.write("torn.tar.gz", "");
  std::ofstream(torn, std::ios::binary) << whole.substr(0, whole.size() / 2);
  test::check_error([&] { read_all(torn); }, "torn.tar.gz", "cannot read");

  const std::string text = tmp.write("notes.tar", "\x01\x02 plain text, not an archive\n");
  test::check_error([&] { read_all(text); }, "notes.tar", "cannot read the archive");
  test::check_error([&] { read_all(tmp.file("missing.zip")); }, "missing.zip", "cannot read the archive");
}

TEST_CASE("archive: CIFAR-10 image folders read from .tar.xz and .zip as from a folder") {
  test::TempDir tmp("archive_cifar");
  Members members;
  for (int c = 0; c < 10; ++c)
    for (int i = 0; i < 2; ++i)
      members.emplace_back("train/class" + std::to_string(c) + "/" + std::to_string(i) + ".png",
                           png32(static_cast<unsigned char>(10 * c + i)));
  for (const std::string kind : {"tar.xz", "zip"}) {
    CAPTURE(kind);
    const std::string path = tmp.write("images." + kind, "");
    std::ofstream(path, std::ios::binary) << test::make_archive(kind, members);
    cifar::ImageSet set = cifar::read_image_folder(path, "train");
    REQUIRE(set.size() == 20);
    CHECK(set.labels[0] == 0);
    CHECK(set.labels[19] == 9);
    CHECK(set.images.at({3, 0, 0, 0}) == 11.0f);  // class1/1.png
  }
}

TEST_CASE("archive: members named ./train/... and a large unrelated member are read as a folder would be") {
  test::TempDir tmp("archive_dot");
  Members members;
  members.emplace_back("./README.big", std::string(20 << 20, 'r'));  // over the image limit, and not an image
  for (int c = 0; c < 10; ++c)
    members.emplace_back("./train/class" + std::to_string(c) + "/0.png", png32(static_cast<unsigned char>(c)));
  const std::string path = tmp.write("images.tar.gz", "");
  std::ofstream(path, std::ios::binary) << test::make_archive("tar.gz", members);
  cifar::ImageSet set = cifar::read_image_folder(path, "train");
  REQUIRE(set.size() == 10);
  CHECK(set.labels[9] == 9);
  CHECK(read_all(path).count("train/class3/0.png") == 1);  // the name without "./"
}
