// Checkpoints: round trip, atomic replacement, and clear errors for every
// kind of damage (truncation, bad header, missing/extra/mismatched tensors).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("rg_ckpt_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

Checkpoint sample() {
  Checkpoint c;
  c.add("param.layer.weight", Tensor::from(Shape{2, 3}, {1, 2, 3, 4, 5, 6}));
  c.add("param.layer.bias", Tensor::from(Shape{3}, {-1, 0, 1}));
  c.add("optim.step", Tensor::scalar(7));
  c.metadata["step"] = "42";
  c.metadata["config"] = R"({"norm": "rmsnorm"})";
  return c;
}

using test::error_of;

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("round trip: tensors, shapes and metadata") {
  fs::path dir = temp_dir();
  std::string path = (dir / "a.safetensors").string();
  save_checkpoint(path, sample());
  Checkpoint c = load_checkpoint(path);
  REQUIRE(c.tensors.size() == 3);
  CHECK(c.find("param.layer.weight")->to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(c.find("param.layer.weight")->shape() == Shape{2, 3});
  CHECK(c.find("optim.step")->rank() == 0);
  CHECK(c.meta("step") == "42");
  CHECK_THROWS_WITH_AS(c.meta("epoch"), doctest::Contains("metadata has no 'epoch'"), Error);
  // The layout is safetensors': u64 header length, JSON, data at offset 0.
  std::string bytes = read_bytes(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
  CHECK(bytes.substr(8, 1) == "{");
  CHECK(bytes.size() == 8 + n + (6 + 3 + 1) * 4);
  fs::remove_all(dir);
}

TEST_CASE("damaged files give one clear error naming the file") {
  fs::path dir = temp_dir();
  std::string good = (dir / "good.safetensors").string();
  save_checkpoint(good, sample());
  std::string bytes = read_bytes(good);
  fs::path bad = dir / "bad.safetensors";

  CHECK(error_of([&] { load_checkpoint((dir / "none.safetensors").string()); }).find("cannot open") !=
        std::string::npos);
  write_bytes(bad, bytes.substr(0, 5));
  CHECK(error_of([&] { load_checkpoint(bad.string()); }).find("truncated") != std::string::npos);
  write_bytes(bad, bytes.substr(0, bytes.size() - 4));
  std::string e = error_of([&] { load_checkpoint(bad.string()); });
  CHECK(e.find("truncated") != std::string::npos);
  CHECK(e.find(bad.string()) != std::string::npos);
  std::string garbled = bytes;
  garbled[9] = '#';
  write_bytes(bad, garbled);
  CHECK(error_of([&] { load_checkpoint(bad.string()); }).find("bad header") != std::string::npos);
  std::string huge = bytes;
  huge[7] = 0x7f;  // header length far past the end
  write_bytes(bad, huge);
  CHECK(error_of([&] { load_checkpoint(bad.string()); }).find("exceeds the file size") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("only a regular file is read: a FIFO (which would block for ever) or a folder is refused by name") {
  const fs::path dir = temp_dir() / "not_files";
  fs::create_directories(dir / "folder.safetensors");
  const fs::path fifo = dir / "fifo.safetensors";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(error_of([&] { load_checkpoint(fifo.string()); }) ==
        "checkpoint " + fifo.string() + ": it is a FIFO, not a regular file; a checkpoint is read from a file");
  CHECK(error_of([&] { load_checkpoint((dir / "folder.safetensors").string()); }).find("it is a folder") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("restoring checks names and shapes and lists every problem") {
  Checkpoint c = sample();
  c.source = "x.safetensors";
  Tensor w = Tensor::zeros(Shape{2, 3}), b = Tensor::zeros(Shape{3});
  restore_tensors(c, "param.", {{"layer.weight", w}, {"layer.bias", b}});
  CHECK(w.at({1, 2}) == 6.0f);
  Tensor wrong = Tensor::zeros(Shape{3, 2});
  std::string e = error_of([&] { restore_tensors(c, "param.", {{"layer.weight", wrong}, {"layer.scale", b}}); });
  CHECK(e.find("tensor 'param.layer.weight' has shape [2, 3] in the checkpoint, the model expects [3, 2]") !=
        std::string::npos);
  CHECK(e.find("missing tensor 'param.layer.scale'") != std::string::npos);
  CHECK(e.find("extra tensor 'param.layer.bias'") != std::string::npos);
}

TEST_CASE("a crash while writing leaves the previous checkpoint loadable") {
  fs::path dir = temp_dir();
  std::string path = (dir / "run.safetensors").string();
  save_checkpoint(path, sample());
  // A child process writes a large checkpoint over it and is killed mid-write.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    Checkpoint big;
    for (int i = 0; i < 64; ++i) big.add("param.w" + std::to_string(i), Tensor::ones(Shape{1024, 1024}));
    for (;;) save_checkpoint(path, big);  // keeps writing until killed
  }
  // Wait until the temporary file exists and is partly written, then kill.
  fs::path temp = dir / ".run.safetensors.tmp";
  for (int i = 0; i < 2000 && !(fs::exists(temp) && fs::file_size(temp) > (1u << 20)); ++i) ::usleep(1000);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  // Either the old checkpoint or a complete new one: never a torn file.
  Checkpoint c = load_checkpoint(path);
  CHECK((c.tensors.size() == 3 || c.tensors.size() == 64));
  fs::remove_all(dir);
}
