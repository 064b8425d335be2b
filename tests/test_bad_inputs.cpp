// The bad-input catalog: malformed files and mistaken flags for
// every driver — cifar10, order_embedding, attentive_reader, rnnsearch — each
// run as a user would run it. Every entry must end with a non-zero exit, one
// clear "error:" line saying what is wrong, and the run folder's earlier files
// untouched (tests/bad_input_catalog.h). The suite also runs under
// AddressSanitizer and UndefinedBehaviorSanitizer (.ci/run), where a reader
// that reads out of bounds or overflows on these inputs fails it.
#include <doctest/doctest.h>
#include <stb/stb_image_write.h>

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "archive_maker.h"
#include "bad_input_catalog.h"
#include "rmsgrad/train/run.h"
#include "test_util.h"

using rg::test::BadInput;
using rg::Run;
namespace test = rg::test;
namespace fs = std::filesystem;

namespace {

const std::string kCifar = RG_CIFAR10_BIN, kOrder = RG_ORDER_EMBEDDING_BIN, kReader = RG_ATTENTIVE_READER_BIN,
                  kTranslate = RG_RNNSEARCH_BIN, kTransformer = RG_TRANSFORMER_BIN;

// ---- file makers ----

std::string record(int label) {
  std::string bytes(3073, '\x40');
  bytes[0] = static_cast<char>(label);
  return bytes;
}

std::string records(int count) {
  std::string bytes;
  for (int i = 0; i < count; ++i) bytes += record(i % 10);
  return bytes;
}

std::string png(int width, int height) {
  std::vector<unsigned char> pixels(static_cast<size_t>(width * height * 3), 128);
  std::string out;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  REQUIRE(stbi_write_png_to_func(append, &out, width, height, 3, pixels.data(), width * 3) != 0);
  return out;
}

// A valid 32×32 PNG whose header then claims another size, its CRC (of the
// chunk's type and data, bytes 12..28) made to match, so that only the size
// is wrong.
std::string png_claiming(uint32_t width, uint32_t height) {
  std::string bytes = png(32, 32);
  for (int i = 0; i < 4; ++i) {
    bytes[16 + i] = static_cast<char>(width >> (24 - 8 * i));
    bytes[20 + i] = static_cast<char>(height >> (24 - 8 * i));
  }
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(bytes.data() + 12), 17);
  for (int i = 0; i < 4; ++i) bytes[29 + i] = static_cast<char>(crc >> (24 - 8 * i));
  return bytes;
}

// Ten class folders train/c0 … train/c9 holding `image` each.
std::vector<std::pair<std::string, std::string>> ten_classes(const std::string& image, const std::string& root) {
  std::vector<std::pair<std::string, std::string>> files;
  for (int c = 0; c < 10; ++c) files.emplace_back(root + "train/c" + std::to_string(c) + "/a.png", image);
  return files;
}

std::string archive_bytes(const std::string& kind, const rg::test::Members& members) {
  return rg::test::make_archive(kind, members);
}

std::string npy(const std::string& dict, const std::string& payload) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + payload;
}

std::string f32s(int count) { return std::string(static_cast<size_t>(count) * 4, '\0'); }

// safetensors bytes: the header's length (u64, little-endian), the header, the data.
std::string safetensors(const std::string& header, const std::string& data = "") {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(uint64_t{header.size()} >> (8 * i));
  return bytes + header + data;
}

// The header of a cifar10 training checkpoint: valid metadata with `change`
// spliced in (a repeated key replaces the earlier one), then `tensors`.
std::string cifar_header(const std::string& change, const std::string& tensors = "") {
  return R"({"__metadata__":{"format":"rmsgrad training state","step":"1","epoch":"0","best_metric":"0",)"
         R"("train_seconds":"1","generator.init":"7 0","generator.noise":"8 0",)"
         R"("data_cursor":"{\"epoch\":0,\"position\":0,\"seed\":9,\"offset\":0}")" +
         change + "}" + tensors + "}";
}

std::string gzip_garbage() { return std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10) + "this is not deflate"; }

const std::string kCbtContext = [] {
  std::string text;
  for (int i = 1; i <= 20; ++i) text += std::to_string(i) + " Tom saw Alice by the river .\n";
  return text;
}();

}  // namespace

TEST_CASE("a second run into a run directory in use is refused, naming the first one's pid") {
  test::TempDir dir("run_in_use");
  const fs::path out = dir.path / "run";
  std::streambuf* stdout_buffer = std::cout.rdbuf(nullptr);
  {
    Run first({.out = out.string()});  // holds <out>/.lock while it lives
    std::string output;
    CHECK(test::run_program(kCifar, "--width 0.1 --train-size 40 --batch 20 --valid-size 20 --zca off --steps 1 --out " +
                                        out.string(),
                            dir.path, output) == 1);
    CHECK_MESSAGE(output.find(fmt::format("error: another run (pid {}) is using the run directory", ::getpid())) !=
                      std::string::npos,
                  output);
  }
  std::cout.rdbuf(stdout_buffer);
  std::string output;  // once the first has ended, the directory is free (and the first run's logs are there)
  CHECK_MESSAGE(test::run_program(kCifar, "--width 0.1 --train-size 40 --batch 20 --valid-size 20 --zca off "
                                          "--steps 1 --overwrite --out " + out.string(), dir.path, output) == 0,
                output);
}

TEST_CASE("--overwrite refuses a run folder with a live run below it; the folders below stay when it moves the run") {
  test::TempDir dir("overwrite_live_below");
  const fs::path out = dir.path / "runs";
  const std::string cifar = kCifar + " --width 0.1 --train-size 40 --batch 20 --valid-size 20 --zca off --steps 1 "
                                     "--overwrite --out " + out.string();
  std::string output;
  REQUIRE_MESSAGE(test::run_program(cifar, "", dir.path, output) == 0, output);  // an earlier run in runs/
  const auto before = test::snapshot(out);
  std::streambuf* stdout_buffer = std::cout.rdbuf(nullptr);
  {
    Run live({.out = (out / "a").string()});  // trains in runs/a, holding runs/a/.lock
    CHECK(test::run_program(cifar, "", dir.path, output) == 1);
    CHECK_MESSAGE(output.find(fmt::format("error: --overwrite: a run (pid {}) is training in '{}'", ::getpid(),
                                          (out / "a").string())) != std::string::npos,
                  output);
  }
  std::cout.rdbuf(stdout_buffer);
  for (const auto& [name, bytes] : before)  // .lock holds the pid of the last process that took it
    if (name != ".lock") CHECK_MESSAGE(test::slurp(out / name) == bytes, name);
  // Once it has ended, the earlier run in runs/ moves aside and runs/a/ stays where it is.
  const std::string a_config = test::slurp(out / "a" / "config.json");
  REQUIRE_MESSAGE(test::run_program(cifar, "", dir.path, output) == 0, output);
  CHECK(test::slurp(out / "a" / "config.json") == a_config);
}

TEST_CASE("the bad-input catalog: every entry fails clearly and leaves the run folder alone") {
  const std::string cifar_run = kCifar + " --width 0.1 --train-size 40 --batch 20 --valid-size 20 --zca off";
  // The earlier run's config.json is a stand-in that records none of cifar10's
  // settings: resuming it needs --resume-with-changes, and the checkpoint is
  // then what is checked.
  const std::string cifar_resume = cifar_run + " --resume --resume-with-changes --out {out}";
  const std::string order_run = kOrder + " --out {out} --features {in}/f.npy --captions {in}/c.txt";
  const std::string order_tiny = kOrder + " --synthetic-images 20 --synthetic-dim 8 --word-dim 4 --embed-dim 4";
  const std::string babi = kReader + " --out {out} --format babi --data {in}/qa.txt";
  const std::string cbt = kReader + " --out {out} --format cbt --data {in}/cbt.txt";
  const std::string deepmind = kReader + " --out {out} --format deepmind --data {in}/questions";
  const std::string parallel = kTranslate + " --out {out} --train-src {in}/s --train-tgt {in}/t --valid-src {in}/s "
                               "--valid-tgt {in}/t";
  const std::string translate = kTranslate + " --translate {in}/input.txt --out {out}";
  const std::string npy_ok = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f32s(6));

  const std::vector<BadInput> catalog = {
      // ---- cifar10: data ----
      {"cifar_missing_data", kCifar, "--out {out} --data {in}/nowhere", {}, "does not exist"},
      {"cifar_batch_not_records", kCifar, "--out {out} --data {in}", {{"data_batch_1.bin", std::string(100, 'x')}},
       "not a multiple of the 3073-byte record size"},
      {"cifar_batch_bad_label", kCifar, "--out {out} --data {in}", {{"data_batch_1.bin", records(3) + record(10)}},
       "has label 10, expected 0..9"},
      {"cifar_batch_empty", kCifar, "--out {out} --data {in}", {{"data_batch_1.bin", ""}}, "is empty"},
      {"cifar_batch_too_few", kCifar, "--out {out} --data {in} --valid-size 5", {{"data_batch_1.bin", records(2)}},
       "2 training images cannot spare 5 for validation"},
      {"cifar_test_batch_torn", kCifar, "--out {out} --data {in} --valid-size 5",
       {{"data_batch_1.bin", records(30)}, {"test_batch.bin", records(2).substr(0, 5000)}},
       "test_batch.bin has 5000 bytes"},
      {"cifar_three_classes", kCifar, "--out {out} --data {in}",
       {{"train/a/x.png", png(32, 32)}, {"train/b/x.png", png(32, 32)}, {"train/c/x.png", png(32, 32)}},
       "train has 3 class folders with images (a, b, c), expected 10"},
      {"cifar_jpeg_truncated", kCifar, "--out {out} --data {in}", ten_classes("\xFF\xD8\xFF", ""),
       "c0/a.png: the JPEG is truncated or damaged (no image size in its 3 bytes)"},
      {"cifar_png_truncated", kCifar, "--out {out} --data {in}", ten_classes(png(32, 32).substr(0, 40), ""),
       "c0/a.png: the file is truncated"},
      {"cifar_data_name_too_long", kCifar, "--out {out} --data {in}/" + std::string(300, 'd'), {},
       "cannot look at '"},
      {"cifar_image_corrupt", kCifar, "--out {out} --data {in}", ten_classes("\x89PNG\r\n\x1a\n garbage", ""),
       "cannot decode image"},
      {"cifar_image_wrong_size", kCifar, "--out {out} --data {in}", ten_classes(png(8, 8), ""),
       "is 8×8, expected 32×32"},
      {"cifar_image_claims_huge", kCifar, "--out {out} --data {in}", ten_classes(png_claiming(20000, 10000), ""),
       "is 20000×10000, expected 32×32"},
      {"cifar_no_images", kCifar, "--out {out} --data {in}", {{"readme.txt", "nothing here\n"}}, "no images under"},
      {"cifar_archive_unknown_format", kCifar, "--out {out} --data {in}/data.tar.gz",
       {{"data.tar.gz", "\x01\x02\x03 not an archive"}}, "data.tar.gz: cannot read the archive"},
      {"cifar_archive_truncated", kCifar, "--out {out} --data {in}/data.tar.gz",
       {{"data.tar.gz", archive_bytes("tar.gz", ten_classes(png(32, 32), "")).substr(0, 200)}}, "data.tar.gz: cannot read"},
      {"cifar_zip_wrong_size", kCifar, "--out {out} --data {in}/data.zip",
       {{"data.zip", archive_bytes("zip", ten_classes(png(8, 8), ""))}}, "is 8×8, expected 32×32"},
      {"cifar_archive_no_train", kCifar, "--out {out} --data {in}/data.tar.gz",
       {{"data.tar.gz", archive_bytes("tar.gz", ten_classes(png(32, 32), "other/"))}}, "no images under"},
      // ---- cifar10: flags ----
      {"cifar_unknown_norm", kCifar, "--out {out} --norm groupnorm", {}, "--norm"},
      {"cifar_negative_width", kCifar, "--out {out} --width -1", {}, "--width"},
      {"cifar_zero_batch", kCifar, "--out {out} --batch 0", {}, "--batch"},
      {"cifar_unknown_flag", kCifar, "--out {out} --learning-rate 0.1", {}, "--learning-rate"},
      {"cifar_negative_threads", kCifar, "--out {out} --threads -1", {}, "--threads"},
      {"cifar_zero_eps", kCifar, "--out {out} --eps 0", {}, "--eps"},
      {"cifar_missing_config", kCifar, "--out {out} --config {in}/missing.toml", {}, "missing.toml"},
      // ---- every flag: one message shape, decimal whole numbers, finite numbers, no empty value ----
      {"flag_zero_batch_message", kCifar, "--out {out} --batch 0", {},
       "error: --batch must be between 1 and 1048576, got 0;"},
      {"flag_zero_log_every", kCifar, "--out {out} --log-every 0", {}, "error: --log-every must be above 0, got 0;"},
      {"flag_octal_steps", kCifar, "--out {out} --steps 010", {}, "--steps takes a decimal whole number, got 010"},
      {"flag_hex_batch", kCifar, "--out {out} --batch 0x14", {}, "--batch takes a decimal whole number, got 0x14"},
      {"flag_nan_lr", kCifar, "--out {out} --lr nan", {}, "--lr must be a finite number, got nan"},
      {"flag_inf_minutes", kCifar, "--out {out} --train-minutes inf", {}, "--train-minutes must be a finite number"},
      {"flag_nan_bucket", kCifar, "--out {out} --bucket-mb nan", {}, "--bucket-mb must be a finite number"},
      {"reader_batchnorm_gru", kReader, "--out {out} --norm batchnorm --cell gru", {},
       "--norm batchnorm works with --cell lstm only"},
      {"flag_too_large_steps", kCifar, "--out {out} --steps 99999999999999999999", {},
       "--steps is too large, got 99999999999999999999"},
      {"flag_fraction_threads", kCifar, "--out {out} --threads 1.5", {}, "--threads takes a decimal whole number, got 1.5"},
      {"flag_underflow_lr", kCifar, "--out {out} --lr 1e-400", {}, "--lr is too small to hold"},
      {"flag_denormal_lr", kReader, "--out {out} --lr 4.9e-324", {}, "--lr is too small to hold"},
      {"flag_boolean_two", kCifar, "--out {out} --skip-nonfinite=2", {}, "--skip-nonfinite takes true or false, got 2"},
      {"flag_boolean_option", kReader, "--out {out} --anonymize 2", {}, "--anonymize takes true or false, got 2"},
      {"flag_not_a_number", kCifar, "--out {out} --lr 5abc", {}, "--lr must be a number, got '5abc'"},
      {"flag_huge_hidden", kTranslate, "--out {out} --hidden 9223372036854775807", {},
       "--hidden must be between 1 and 65536, got 9223372036854775807"},
      {"flag_heads_not_dividing", kTransformer, "--out {out} --heads 3 --model-size 32", {},
       "--heads 3 must divide --model-size 32"},
      {"flag_resume_and_overwrite", kCifar, "--out {out} --resume --overwrite", {}, "give one of them"},
      {"flag_changes_without_resume", kCifar, "--out {out} --resume-with-changes", {},
       "--resume-with-changes goes with --resume"},
      {"out_is_root", kCifar, "--out /", {}, "--out '/' is the filesystem's root"},
      {"out_name_too_long", kCifar, "--out {in}/" + std::string(300, 'o'), {},
       "is too long: its name 'oooo", /*overwrite=*/false},
      {"out_path_too_long", kCifar, "--out {in}/" + [] {
         std::string folders;
         for (int i = 0; i < 600; ++i) folders += "folder" + std::to_string(i % 10) + "/";
         return folders;
       }(), {}, "bytes as an absolute path, and this system allows 4095 for a path (PATH_MAX)", /*overwrite=*/false},
      {"out_lock_is_a_link", kCifar, "--out {out}", {{"elsewhere", "a file of the user's\n"}},
       "/out/.lock' is a symbolic link; the run does not write through links", /*overwrite=*/true,
       [](const fs::path& in, const fs::path& out) { fs::create_symlink(in / "elsewhere", out / ".lock"); }},
      {"out_in_dev", kCifar, "--out /dev/rg_run", {}, "--out '/dev/rg_run' is in /dev, a folder of the system's"},
      {"resume_missing_folder", kCifar, "--resume --out {in}/nowhere", {},
       "--resume: there is no run in '"},
      {"resume_garbage_config", cifar_run + " --resume --out {out}", "", {{"out/config.json", "garbage\n"}},
       "config.json is missing or not a JSON object, so this run's settings cannot be compared"},
      {"translate_line_too_long", parallel, "", {{"s", std::string(1100000, 'a') + "\n"}, {"t", "b\n"}},
       "s:1: a line longer than 1048576 bytes"},
      {"flag_given_twice", kCifar, "--out {out} --steps 2 --steps 4", {}, "--steps was given 2 times; give it once"},
      {"flag_hex_lr", kCifar, "--out {out} --lr 0x1p3", {}, "--lr takes a decimal number, got 0x1p3"},
      {"flag_nan_clip", kReader, "--out {out} --clip nan", {}, "--clip must be a finite number, got nan"},
      {"flag_negative_seed", kCifar, "--out {out} --seed -1", {}, "--seed must be 0 or more, got -1"},
      {"flag_huge_width", kCifar, "--out {out} --width 1e20", {}, "--width must be between 0.01 and 64, got 1e20"},
      {"flag_tiny_eps", kCifar, "--out {out} --eps 1e-60", {}, "--eps is too small to hold (below 1.17549e-38), got 1e-60"},
      {"flag_empty_translate", kTranslate, "--translate '' --out {out}", {}, "--translate was given an empty value"},
      {"flag_empty_train_src", kTranslate,
       "--out {out} --train-src '' --train-tgt {in}/t --valid-src {in}/s --valid-tgt {in}/t", {},
       "--train-src was given an empty value"},
      {"flag_empty_out", kCifar, "--out ''", {}, "--out was given an empty value"},
      {"flag_config_bom", kCifar, "--out {out} --config {in}/c.toml", {{"c.toml", "\xEF\xBB\xBF" "batch = 20\n"}},
       "c.toml starts with a UTF-8 byte-order mark"},
      {"flag_config_fifo", kCifar, "--out {out} --config {in}/c.toml", {},
       "c.toml is not a regular file (a FIFO, a device or a folder)", true,
       [](const fs::path& in, const fs::path&) { REQUIRE(::mkfifo((in / "c.toml").c_str(), 0644) == 0); }},
      {"flag_config_dev_zero", kCifar, "--out {out} --config /dev/zero", {}, "--config /dev/zero is not a regular file"},
      {"flag_config_huge", kCifar, "--out {out} --config {in}/c.toml", {{"c.toml", std::string(2 << 20, '#')}},
       "c.toml is a file of 2097152 bytes; flags files are small"},
      {"flag_config_nul", kCifar, "--out {out} --config {in}/c.toml", {{"c.toml", std::string("seed = 1\n\0\0", 11)}},
       "c.toml holds a NUL byte (line 2, byte 9)"},
      {"flag_config_list", kCifar, "--out {out} --config {in}/c.toml", {{"c.toml", "seed = [1,2]\n"}},
       "--seed takes one value, --config"},
      {"flag_config_folder", kCifar, "--out {out} --config {in}", {}, "is not a regular file"},
      {"flag_config_octal", kCifar, "--out {out} --config {in}/c.toml", {{"c.toml", "steps = \"010\"\n"}},
       "--steps takes a decimal whole number, got 010"},
      // ---- OMP_NUM_THREADS: checked before the first step, in every driver (core/parallel.h) ----
      {"omp_not_a_number", "OMP_NUM_THREADS=abc " + kCifar, "--out {out}", {},
       "error: OMP_NUM_THREADS is 'abc', not a number of threads; give 1 to 4096 threads"},
      {"omp_zero", "OMP_NUM_THREADS=0 " + kOrder, "--out {out}", {}, "OMP_NUM_THREADS is '0': no threads"},
      {"omp_negative", "OMP_NUM_THREADS=-3 " + kReader, "--out {out}", {}, "OMP_NUM_THREADS is '-3', not a number"},
      {"omp_empty", "OMP_NUM_THREADS= " + kTranslate, "--out {out}", {}, "OMP_NUM_THREADS is set but empty"},
      {"omp_too_many", "OMP_NUM_THREADS=99999 " + kTransformer, "--out {out}", {},
       "OMP_NUM_THREADS is '99999', more threads than the 4096"},
      {"omp_nested_zero", "OMP_NUM_THREADS=2,0 " + kCifar, "--out {out}", {}, "no threads for a nested level"},
      {"omp_translate", "OMP_NUM_THREADS=abc " + translate, "", {{"input.txt", "ein hund\n"}},
       "OMP_NUM_THREADS is 'abc'"},
      // ---- paths are bytes: one that is not UTF-8 is named, escaped, never a JSON library's error ----
      {"data_not_utf8", kCifar, "--out {out} --data '{in}/d\xfe'", {}, "d\\xfe does not exist"},
      {"out_not_utf8_resume", kCifar, "--resume --out '{in}/run\xff'", {}, "run\\xff' (no such directory)"},
      {"mt_source_not_utf8", parallel, "--test-src '{in}/t\xff\n' --test-tgt {in}/t", {{"s", "a\n"}, {"t", "b\n"}},
       "t\\xff\\x0a"},
      // ---- the run folder: never mixed, never changed by a run that does not train ----
      {"run_folder_holds_a_run", cifar_run, "--steps 1 --out {out}", {{"out/checkpoint.safetensors", "x"}},
       "holds a run (config.json, metrics.jsonl, train.log, checkpoint.safetensors): --resume continues it, "
       "--overwrite moves its files", /*overwrite=*/false},
      {"run_folder_stopped_before_checkpoint", cifar_run, "--steps 1 --out {out}", {}, "that stopped before its "
       "first checkpoint, so --resume has nothing to continue: --overwrite moves", /*overwrite=*/false},
      {"resume_before_first_checkpoint", cifar_run, "--steps 1 --resume --resume-with-changes --out {out}", {},
       "stopped before its first checkpoint (" },
      {"overwrite_foreign_config_beside_run_files", cifar_run, "--steps 1 --out {out}",
       {{"out/config.json", "{\"colour\": \"blue\"}\n"}}, "holds a config.json that is not a run's"},
      {"resume_only_foreign_config", cifar_run, "--steps 1 --resume --out {out}",
       {{"out/config.json", "{\"colour\": \"blue\"}\n"}}, "there is no run in", /*overwrite=*/true,
       [](const fs::path&, const fs::path& out) { fs::remove(out / "train.log"), fs::remove(out / "metrics.jsonl"); }},
      {"out_dangling_symlink", kCifar, "--out {out}/to-nowhere", {},
       "to-nowhere' is a symbolic link to 'nowhere', which does not exist",
       /*overwrite=*/false, [](const fs::path&, const fs::path& out) { fs::create_symlink("nowhere", out / "to-nowhere"); }},
      {"resume_other_program", cifar_run, "--steps 1 --resume --out {out}",
       {{"out/config.json", "{\"program\": \"lm\", \"seed\": 0}\n"}},
       "was made by another program, lm, not cifar10"},
      {"resume_unknown_settings", cifar_run, "--steps 1 --resume --out {out}", {},
       "does not record these settings (it was made by an older version of the program)"},
      {"resume_other_norm", cifar_run, "--steps 1 --resume --norm rmsnorm --seed 3 --out {out}",
       {{"out/config.json", "{\"seed\": 0, \"norm\": \"layernorm\", \"steps\": 1}\n"}},
       "--resume would train something else than the run in"},
      {"resume_other_norm_lists_all", cifar_run, "--steps 1 --resume --norm rmsnorm --seed 3 --out {out}",
       {{"out/config.json", "{\"seed\": 0, \"norm\": \"layernorm\", \"steps\": 1}\n"}},
       "--seed 0 -> 3, --norm layernorm -> rmsnorm;"},
      {"cifar_config_unknown_key", kCifar, "--out {out} --config {in}/c.toml", {{"c.toml", "colour = 3\n"}},
       "unknown setting"},
      {"cifar_config_bad_value", kCifar, "--out {out} --config {in}/c.toml", {{"c.toml", "width = \"wide\"\n"}},
       "wide"},
      {"overwrite_data_inside_out", kCifar, "--out {out} --data {out}/data", {{"out/data/data_batch_1.bin", records(30)}},
       "/out/data' is inside --out"},
      {"overwrite_config_inside_out", kCifar, "--out {out} --config {out}/c.toml", {{"out/c.toml", "batch = 20\n"}},
       "/out/c.toml' is inside --out"},
      {"resume_data_is_a_run_file", cifar_run, "--resume --out {out} --data {out}/train.log", {},
       "/out/train.log' is the run file 'train.log' of --out"},
      {"cifar_out_is_a_file", kCifar, "--out {in}/afile/run", {{"afile", "a file, not a folder\n"}}, "run directory"},
      // ---- cifar10: checkpoints on --resume ----
      {"checkpoint_missing", cifar_resume, "", {}, "stopped before its first checkpoint ("},
      {"checkpoint_too_short", cifar_resume, "", {{"out/checkpoint.safetensors", "abc"}}, "too short"},
      {"checkpoint_header_too_long", cifar_resume, "",
       {{"out/checkpoint.safetensors", std::string("\xff\xff\xff\xff\xff\xff\x00\x00{}", 10)}},
       "exceeds the file size"},
      {"checkpoint_header_not_json", cifar_resume, "", {{"out/checkpoint.safetensors", safetensors("{not json")}},
       "not valid JSON"},
      {"checkpoint_huge_shape", cifar_resume, "",
       {{"out/checkpoint.safetensors",
         safetensors(cifar_header("", R"(,"param.w":{"dtype":"F32","shape":[1099511627776,1099511627776],)"
                                        R"("data_offsets":[0,4]})"),
                     f32s(1))}},
       "needs more bytes than"},
      {"checkpoint_negative_dim", cifar_resume, "",
       {{"out/checkpoint.safetensors",
         safetensors(cifar_header("", R"(,"param.w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"), f32s(1))}},
       "negative dimension"},
      {"checkpoint_f16", cifar_resume, "",
       {{"out/checkpoint.safetensors",
         safetensors(cifar_header("", R"(,"param.w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]})"), f32s(1))}},
       "only F32 is supported"},
      {"checkpoint_offsets_past_end", cifar_resume, "",
       {{"out/checkpoint.safetensors",
         safetensors(cifar_header("", R"(,"param.w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]})"), f32s(1))}},
       "truncated"},
      {"checkpoint_overlap", cifar_resume, "",
       {{"out/checkpoint.safetensors",
         safetensors(cifar_header("", R"(,"param.a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                        R"("param.b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]})"),
                     f32s(3))}},
       "overlap"},
      {"checkpoint_foreign", cifar_resume, "", {{"out/checkpoint.safetensors", safetensors("{}")}},
       "not an rmsgrad training state file (its format is 'unknown')"},
      {"checkpoint_earlier_version", cifar_resume, "",
       {{"out/checkpoint.safetensors", safetensors(R"({"__metadata__":{"format":"rmsgrad training checkpoint 1"}})")}},
       "a checkpoint of an earlier version of the drivers (format 'rmsgrad training checkpoint 1')"},
      {"checkpoint_bad_generator", cifar_resume, "",
       {{"out/checkpoint.safetensors", safetensors(cifar_header(R"(,"generator.noise":"-1 0")"))}},
       "metadata 'generator.noise'"},
      {"checkpoint_bad_step", cifar_resume, "",
       {{"out/checkpoint.safetensors", safetensors(cifar_header(R"(,"step":"12abc")"))}}, "is not a whole number"},
      {"checkpoint_bad_seconds", cifar_resume, "",
       {{"out/checkpoint.safetensors", safetensors(cifar_header(R"(,"train_seconds":"soon")"))}},
       "is not a finite number"},
      {"checkpoint_bad_cursor", cifar_resume, "",
       {{"out/checkpoint.safetensors", safetensors(cifar_header(R"(,"data_cursor":"[]")"))}}, "data cursor state"},
      {"checkpoint_other_model", cifar_resume, "",
       {{"out/checkpoint.safetensors",
         safetensors(cifar_header("", R"(,"param.bogus":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})"),
                     f32s(1))}},
       "holds another model: first difference: the model's parameter '"},
      {"checkpoint_other_model_names_its_parameter", cifar_resume, "",
       {{"out/checkpoint.safetensors",
         safetensors(cifar_header("", R"(,"param.bogus":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})"),
                     f32s(1))}},
       "is not in it, which has 'bogus' instead"},
      {"checkpoint_other_program", cifar_resume, "",
       {{"out/checkpoint.safetensors", safetensors(cifar_header(R"(,"program":"lm")"))}},
       "checkpoint.safetensors was written by another program, lm, not cifar10; resume it with lm"},
      {"checkpoint_fifo", cifar_resume, "", {},
       "checkpoint.safetensors: it is a FIFO, not a regular file",
       /*overwrite=*/true, [](const fs::path&, const fs::path& out) {
         REQUIRE(::mkfifo((out / "checkpoint.safetensors").c_str(), 0644) == 0);
       }},
      // ---- order_embedding ----
      {"order_features_alone", kOrder, "--out {out} --features {in}/f.npy", {{"f.npy", npy_ok}}, "go together"},
      {"order_not_npy", order_run, "", {{"f.npy", "just text\n"}, {"c.txt", "a\n"}}, "not an .npy file"},
      {"order_npy_fortran", order_run, "",
       {{"f.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f32s(6))}, {"c.txt", "a\n"}},
       "fortran_order is True"},
      {"order_npy_3d", order_run, "",
       {{"f.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3), }", f32s(6))}, {"c.txt", "a\n"}},
       "is not 2-D"},
      {"order_npy_nan_row", order_run, "",
       {{"f.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                      f32s(4) + std::string("\x00\x00\xc0\x7f", 4) + f32s(1))},
        {"c.txt", "a\nb\n"}},
       "row 1 (image 2) holds nan in column 1; every feature must be finite"},
      {"order_npy_claims_2_40_rows", order_run, "",
       {{"f.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 2048), }", f32s(6))},
        {"c.txt", "a\n"}},
       "data truncated"},
      {"order_npy_float64", order_run, "",
       {{"f.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", f32s(12))}, {"c.txt", "a\n"}},
       "unsupported dtype '<f8'"},
      {"order_npy_bad_header", order_run, "",
       {{"f.npy", npy("{'descr': '<f4', 'shape': (2, 3", f32s(6))}, {"c.txt", "a\n"}},
       "cannot parse the .npy header"},
      {"order_npy_extra_bytes", order_run, "", {{"f.npy", npy_ok + "xx"}, {"c.txt", "a\n"}}, "extra bytes"},
      {"order_caption_count", order_run + " --captions-per-image 5", "",
       {{"f.npy", npy_ok}, {"c.txt", "a dog\na cat\na cow\n"}}, "3 lines, but the 2 images"},
      {"order_captions_per_image_overflow", order_run + " --captions-per-image 9223372036854775807", "",
       {{"f.npy", npy_ok}, {"c.txt", "a dog\na cat\n"}}, "more than 2^63"},
      {"order_caption_no_word", order_run + " --captions-per-image 1", "",
       {{"f.npy", npy_ok}, {"c.txt", "a dog\n\n"}}, "caption has no word"},
      {"order_captions_missing", order_run, "", {{"f.npy", npy_ok}}, "no such file"},
      {"order_captions_bad_utf8", order_run + " --captions-per-image 1", "",
       {{"f.npy", npy_ok}, {"c.txt", "a dog\na \xff cat\n"}}, "invalid UTF-8"},
      {"order_unknown_method", kOrder, "--out {out} --method euclid", {}, "--method"},
      {"order_batch_of_one", kOrder, "--out {out} --batch 1", {}, "--batch"},
      {"order_resume_torn_checkpoint", order_tiny + " --resume --resume-with-changes --out {out}", "",
       {{"out/checkpoint.safetensors", safetensors("{\"__metadata__\":")}}, "not valid JSON"},
      // ---- attentive_reader ----
      {"babi_missing", babi, "", {}, "no such file"},
      {"babi_empty", babi, "", {{"qa.txt", "\n\n"}}, "the file is empty"},
      {"babi_starts_at_2", babi, "", {{"qa.txt", "2 Mary went home.\n3 Where is Mary?\thome\t2\n"}},
       "the first story starts at line number 2, not 1"},
      {"babi_numbers_jump", babi, "", {{"qa.txt", "1 Mary went home.\n2 John left.\n5 Where is Mary?\thome\t1\n"}},
       "line number 5 after 2"},
      {"babi_question_without_answer", babi, "", {{"qa.txt", "1 Mary went home.\n2 Where is Mary?\n"}},
       "a question without a tab-separated answer"},
      {"babi_line_without_number", babi, "", {{"qa.txt", "Mary went home.\n"}},
       "does not start with a line number"},
      {"babi_no_question", babi, "", {{"qa.txt", "1 Mary went home.\n2 John left.\n"}},
       "without a question line"},
      {"babi_bad_utf8", babi, "", {{"qa.txt", "1 Mary went \xc3\x28 home.\n"}}, "invalid UTF-8"},
      {"cbt_numbering", cbt, "", {{"cbt.txt", "1 Tom ran .\n3 Tom sat .\n"}}, "line numbered 3 where 2 was expected"},
      {"cbt_answer_not_candidate", cbt, "", {{"cbt.txt", kCbtContext + "21 XXXXX ran .\tBob\t\tTom|Alice\n"}},
       "is not among the candidates"},
      {"cbt_no_slot", cbt, "", {{"cbt.txt", kCbtContext + "21 Tom ran .\tTom\t\tTom|Alice\n"}}, "has no XXXXX"},
      {"cbt_ends_mid_question", cbt, "", {{"cbt.txt", kCbtContext.substr(0, 60)}}, "the file ends after line"},
      {"cbt_empty_candidate", cbt, "", {{"cbt.txt", kCbtContext + "21 XXXXX ran .\tTom\t\tTom||Alice\n"}},
       "an empty candidate"},
      {"deepmind_no_questions", deepmind, "", {{"questions/readme.txt", "none\n"}}, "no *.question files"},
      {"deepmind_answer_not_entity", deepmind, "",
       {{"questions/a.question", "url\n\n@entity1 ran .\n\n@placeholder ran\n\n@entity9\n\n@entity1:Tom\n"}},
       "is not among the entity lines"},
      {"deepmind_bad_entity_line", deepmind, "",
       {{"questions/a.question", "url\n\n@entity1 ran .\n\n@placeholder ran\n\n@entity1\n\nTom is @entity1\n"}},
       "malformed entity line"},
      {"deepmind_no_placeholder", deepmind, "",
       {{"questions/a.question", "url\n\n@entity1 ran .\n\nsomeone ran\n\n@entity1\n\n@entity1:Tom\n"}},
       "the query has no @placeholder"},
      {"deepmind_only_url", deepmind, "", {{"questions/a.question", "http://example.com\n"}}, "missing the context"},
      {"reader_unknown_format", kReader, "--out {out} --format xml --data {in}/x", {}, "--format"},
      {"reader_data_without_format", kReader, "--out {out} --data {in}/qa.txt", {{"qa.txt", "1 a.\n"}},
       "--format synthetic takes no --data"},
      {"reader_dropout_too_big", kReader, "--out {out} --dropout 1.5", {}, "--dropout"},
      // ---- rnnsearch ----
      {"mt_source_missing", parallel, "", {{"t", "a\n"}}, "no such file"},
      {"mt_line_counts_differ", parallel, "", {{"s", "ein\nzwei\n"}, {"t", "one\n"}},
       "a parallel corpus must align line by line"},
      {"mt_bad_utf8", parallel, "", {{"s", "ein \xed\xa0\x80 hund\n"}, {"t", "a dog\n"}}, "invalid UTF-8"},
      {"mt_corrupt_gzip", parallel, "", {{"s", gzip_garbage()}, {"t", "a dog\n"}}, "corrupt gzip data"},
      {"mt_source_without_target", kTranslate, "--out {out} --train-src {in}/s", {{"s", "a\n"}}, "requires"},
      {"mt_vocab_too_small", kTranslate, "--out {out} --vocab-size 5", {}, "--vocab-size"},
      {"mt_beam_zero", kTranslate, "--out {out} --beam 0", {}, "--beam"},
      {"mt_translate_no_model", translate, "", {{"input.txt", "ein hund\n"}}, "subword.model does not exist"},
      {"mt_translate_corrupt_model", translate, "",
       {{"input.txt", "ein hund\n"}, {"out/subword.model", "not a sentencepiece model"}},
       "is not a SentencePiece model (its 25 bytes do not load as one); it was damaged"},
      {"mt_translate_empty_model", translate, "", {{"input.txt", "ein hund\n"}, {"out/subword.model", ""}},
       "is not a SentencePiece model (the file is empty)"},
      {"mt_translate_model_is_folder", translate, "", {{"input.txt", "ein hund\n"}}, "is not a regular file",
       true, [](const fs::path&, const fs::path& out) { fs::create_directory(out / "subword.model"); }},
      {"mt_translate_model_is_link", translate, "", {{"input.txt", "ein hund\n"}, {"model", "x"}},
       "subword.model' is a symbolic link; the run reads and writes only files of its own directory", true,
       [](const fs::path& in, const fs::path& out) { fs::create_symlink(in / "model", out / "subword.model"); }},
      {"mt_resume_model_is_fifo", kTranslate + " --out {out} --resume --resume-with-changes --threads 1", "", {},
       "subword.model is not a regular file", true,
       [](const fs::path&, const fs::path& out) { REQUIRE(::mkfifo((out / "subword.model").c_str(), 0644) == 0); }},
      {"mt_translate_bad_config_value", translate, "",
       {{"input.txt", "ein hund\n"}, {"out/config.json", "{\"embed\": \"large\"}\n"}}, "config.json"},
  };
  CHECK(catalog.size() >= 50);
  rg::test::TempDir root("bad_inputs");
  for (const BadInput& entry : catalog) rg::test::check_bad_input(entry, root.path);
}
