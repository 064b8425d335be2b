// Symbolic links at every name a run writes (issue 67). For each driver at
// its tiniest settings, a link to a user's file outside the run folder is
// planted at every file the run writes into --out and at the temporary of
// every file it writes whole (core/atomic_file.h: .<name>.tmp beside it);
// the driver runs fresh, resumed, and resumed with a link where a run
// refuses one. The user's files must keep their bytes, and each run either
// refuses with one "error:" line or leaves real files where the links were.
// The run folder's name holds a byte that is not UTF-8: paths are bytes
// (core/escape_bytes.h), and config.json records them escaped.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace fs = std::filesystem;
using rg::test::read_file;

namespace {

struct Driver {
  const char* name;
  const char* binary;
  std::string flags;                     // four steps, validated every two (cifar10: every epoch of two)
  bool best;                             // writes best.safetensors at its first validation
  std::vector<std::string> first_half;   // written by --stop-after 2, besides the Run's files
  std::vector<std::string> second_half;  // written by the resume to step 4, besides the Run's files
  std::vector<std::string> refused;      // read on resume, or refused as a link, besides the Run's files
};

// What every run writes: the Run's logs and the Trainer's checkpoint (a
// link at one of them, or at best.safetensors, makes the folder hold a run).
const std::vector<std::string> kRunFiles = {"config.json", "metrics.jsonl", "train.log", "checkpoint.safetensors"};
// Those of them written whole (metrics.jsonl on resume), and the best checkpoint.
const std::vector<std::string> kWholeFiles = {"config.json", "metrics.jsonl", "checkpoint.safetensors",
                                              "best.safetensors"};

const std::string kTranslationSizes =
    "--eval-every 2 --batch 8 --synthetic-max-words 4 --synthetic-pairs 60 --valid-limit 4 --valid-beam 1 --beam 1 ";

const Driver kDrivers[] = {
    {"cifar10", RG_CIFAR10_BIN, "--width 0.1 --train-size 40 --valid-size 20 --batch 20 --zca off", false, {}, {}, {}},
    {"order_embedding", RG_ORDER_EMBEDDING_BIN,
     "--embed-dim 8 --word-dim 4 --synthetic-images 40 --synthetic-dim 8 --batch 8 --eval-every 2", true, {}, {}, {}},
    {"attentive_reader", RG_ATTENTIVE_READER_BIN, "--embed 8 --hidden 8 --batch 4 --synthetic-questions 40 "
     "--eval-every 2", false, {}, {}, {}},
    {"rnnsearch", RG_RNNSEARCH_BIN, kTranslationSizes + "--embed 8 --hidden 8", true,
     {"subword.model", "hypotheses/valid.step0.txt", "hypotheses/valid.step2.txt"},
     {"hypotheses/valid.step4.txt", "hypotheses/test.txt"}, {"subword.model", "hypotheses"}},
    {"transformer", RG_TRANSFORMER_BIN, kTranslationSizes + "--model-size 16 --ffn 16 --heads 2 --layers 1", true,
     {"subword.model", "hypotheses/valid.step0.txt", "hypotheses/valid.step2.txt"},
     {"hypotheses/valid.step4.txt", "hypotheses/test.txt"}, {"subword.model", "hypotheses"}},
    {"lm", RG_LM_BIN,
     "--layers 1 --model-size 16 --heads 2 --ffn 16 --context 8 --batch 4 --synthetic-chars 2000 --valid-chars 64 "
     "--sample-chars 8 --eval-every 2", true, {}, {"sample.txt"}, {}},
};

// "hypotheses/test.txt" → "hypotheses/.test.txt.tmp": AtomicFile's temporary.
std::string temporary_of(const std::string& name) {
  const fs::path p(name);
  return (p.parent_path() / ("." + p.filename().string() + ".tmp")).string();
}

// The user's files behind the links, with the bytes they must keep.
class Planted {
 public:
  Planted(fs::path run, fs::path outside) : run_(std::move(run)), outside_(std::move(outside)) {
    fs::create_directories(outside_);
  }

  // A link at <run>/<name> to a user's file (or, for a folder, a user's
  // folder); a link already there is left as it is.
  void plant(const std::string& name, bool folder = false) {
    const fs::path at = run_ / name;
    if (fs::is_symlink(at)) return;
    REQUIRE_MESSAGE(!fs::exists(fs::symlink_status(at)), name);
    fs::path target = outside_ / std::to_string(targets_.size());
    if (folder) {
      fs::create_directories(target);
    } else {
      std::ofstream(target, std::ios::binary) << "the user's own file, not " << name << "\n";
    }
    targets_[target] = folder ? "" : read_file(target);
    fs::create_directories(at.parent_path());
    fs::create_symlink(target, at);
  }

  // Every user's file as it was, and no file added to a user's folder.
  void check_untouched() const {
    for (const auto& [target, bytes] : targets_) {
      CAPTURE(target);
      if (fs::is_directory(target)) {
        CHECK(fs::is_empty(target));
      } else {
        CHECK(read_file(target) == bytes);
      }
    }
  }

 private:
  fs::path run_, outside_;
  std::map<fs::path, std::string> targets_;
};

struct Outcome {
  int code = 0;
  std::string err;
};

Outcome run_driver(const Driver& d, const std::string& args, const fs::path& dir) {
  const std::string command = "cd '" + dir.string() + "' && '" + d.binary + "' " + d.flags +
                              " --threads 1 --steps 4 " + args + " > stdout.txt 2> stderr.txt";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(dir / "stderr.txt")};
}

// A refusal: a non-zero exit and one "error:" line, nothing else gone wrong.
void check_refused(const Outcome& o) {
  CAPTURE(o.err);
  CHECK(o.code != 0);
  int error_lines = 0;
  std::istringstream lines(o.err);
  for (std::string line; std::getline(lines, line);) error_lines += line.rfind("error: ", 0) == 0;
  CHECK(error_lines == 1);
  CHECK(o.err.find("terminate called") == std::string::npos);
}

// A run that went through: every name it writes holds a real file, and the
// temporaries of those written whole are gone.
void check_written(const Outcome& o, const fs::path& run, const std::vector<std::string>& written) {
  REQUIRE_MESSAGE(o.code == 0, o.err);
  for (const std::string& name : written) {
    CAPTURE(name);
    CHECK(!fs::is_symlink(run / name));
    CHECK(fs::is_regular_file(run / name));
    CHECK(!fs::exists(fs::symlink_status(run / temporary_of(name))));
  }
}

}  // namespace

TEST_CASE("every driver: links at the names a run writes are never written through") {
  for (const Driver& d : kDrivers) {
    INFO(d.name);
    rg::test::TempDir tmp(std::string("run_links_") + d.name);
    const fs::path run = tmp.path / "run\xff";  // a name that is not UTF-8
    const std::string out = " --out '" + run.string() + "'";
    Planted planted(run, tmp.path / "outside");
    fs::create_directories(run);

    std::vector<std::string> run_files = kRunFiles;
    if (d.best) run_files.push_back("best.safetensors");

    // Fresh: links where the Run's files go make the folder hold a run.
    for (const std::string& name : run_files) planted.plant(name);
    check_refused(run_driver(d, "--stop-after 2" + out, tmp.path));
    planted.check_untouched();
    for (const std::string& name : run_files) fs::remove(run / name);

    // Fresh, with links at every temporary and at every file of the driver's own.
    for (const std::string& name : kWholeFiles) planted.plant(temporary_of(name));
    for (const auto* half : {&d.first_half, &d.second_half})
      for (const std::string& name : *half) planted.plant(temporary_of(name));
    for (const std::string& name : d.first_half) planted.plant(name);
    std::vector<std::string> written = {"config.json", "train.log", "checkpoint.safetensors"};
    if (d.best) written.push_back("best.safetensors");
    written.insert(written.end(), d.first_half.begin(), d.first_half.end());
    check_written(run_driver(d, "--stop-after 2" + out, tmp.path), run, written);
    planted.check_untouched();
    const std::string recorded = nlohmann::json::parse(read_file(run / "config.json"))["out"];
    CHECK(recorded.ends_with("run\\xff"));  // the byte 0xff as text

    // Resumed with a link where the run reads, or refuses one: one error, nothing written.
    std::vector<std::string> refused = run_files;
    refused.push_back(".lock");
    refused.insert(refused.end(), d.refused.begin(), d.refused.end());
    for (const std::string& name : refused) {
      CAPTURE(name);
      const fs::path real = run / name, aside = run / (name + ".real");
      fs::rename(real, aside);
      planted.plant(name, name == "hypotheses");
      check_refused(run_driver(d, "--resume" + out, tmp.path));
      planted.check_untouched();
      fs::remove(real);
      fs::rename(aside, real);
    }

    // Resumed to the end, with links at every temporary and at the files of the second half.
    for (const std::string& name : kWholeFiles) planted.plant(temporary_of(name));
    for (const std::string& name : d.second_half) planted.plant(name);
    written = {"config.json", "metrics.jsonl", "train.log", "checkpoint.safetensors"};
    written.insert(written.end(), d.second_half.begin(), d.second_half.end());
    check_written(run_driver(d, "--resume" + out, tmp.path), run, written);
    planted.check_untouched();
  }
}
