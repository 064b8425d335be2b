#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/experiments/translation/subword.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/file_status.h"

namespace rg {

namespace {

// Feeds the sentences to the trainer without writing them to a file.
class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>& s) : sentences_(s) {}
  bool done() const override { return index_ >= sentences_.size(); }
  void Next() override { ++index_; }
  const std::string& value() const override { return sentences_[index_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& sentences_;
  size_t index_ = 0;
};

}  // namespace

Subword Subword::trained(const std::vector<std::string>& sentences, int vocab_size) {
  check(!sentences.empty(), "subword: no training sentences");
  check(vocab_size > 8, "subword: vocabulary size {} is too small", vocab_size);
  const std::string args = fmt::format(
      "--vocab_size={} --model_type=bpe --character_coverage=1.0 "
      "--pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3 --input_sentence_size=0 --shuffle_input_sentence=false "
      "--num_threads=1 --minloglevel=2",
      vocab_size);
  VectorIterator it(sentences);
  std::string serialized;
  // SentencePiece logs "Running command: …" to stderr before it reads
  // --minloglevel; its errors come back in `status`, so stderr is silenced
  // while it trains (a driver's stderr holds only its own "error:" line).
  const int saved_stderr = ::dup(STDERR_FILENO), null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved_stderr >= 0 && null_fd >= 0) ::dup2(null_fd, STDERR_FILENO);
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &serialized);
  if (saved_stderr >= 0 && null_fd >= 0) ::dup2(saved_stderr, STDERR_FILENO);
  if (null_fd >= 0) ::close(null_fd);
  if (saved_stderr >= 0) ::close(saved_stderr);
  check(status.ok(), "subword: SentencePiece training failed: {}", status.ToString());
  Subword subword;
  const auto loaded = subword.processor_->LoadFromSerializedProto(serialized);
  check(loaded.ok(), "subword: cannot load the model just trained: {}", loaded.ToString());
  return subword;
}

void Subword::train(const std::vector<std::string>& sentences, int vocab_size, const std::string& model_path) {
  trained(sentences, vocab_size).save(model_path);
}

void Subword::save(const std::string& model_path) const {
  write_file_atomically(model_path, processor_->serialized_model_proto());  // whole, never through a link
}

Subword::Subword() : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
Subword::Subword(Subword&&) noexcept = default;

namespace {

// The bytes of a saved model, refused unless a regular file of the run's own
// (never through a link: opening a FIFO would wait for ever, and a folder or
// device is no model). Opened without following a link or blocking, and
// looked at through the open file, so what is checked is what is read.
std::string model_bytes(const std::string& model_path) {
  namespace fs = std::filesystem;
  const fs::path path(model_path);
  std::error_code ec;
  const fs::file_type type = fs::symlink_status(path, ec).type();
  check(type != fs::file_type::not_found, "subword: model {} does not exist", model_path);
  check(type != fs::file_type::symlink, "'{}' is a symbolic link; the run reads and writes only files of its own "
        "directory", model_path);
  const int fd = ::open(model_path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  check(fd >= 0, "{} cannot be opened: {}", model_path, std::strerror(errno));
  struct stat st {};
  std::string bytes, problem;
  constexpr off_t kMaxBytes = off_t{1} << 30;  // a model of millions of pieces is some tens of MB
  if (::fstat(fd, &st) != 0) {
    problem = fmt::format("{} cannot be read: {}", model_path, std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    problem = fmt::format("{} is not a regular file (a FIFO, a device or a folder); it was damaged — "
                          "start afresh with --overwrite", model_path);
  } else if (st.st_size > kMaxBytes) {
    problem = fmt::format("{} is not a SentencePiece model ({} bytes, far more than a model holds); "
                          "it was damaged — start afresh with --overwrite", model_path, static_cast<long long>(st.st_size));
  } else {
    char buffer[65536];
    for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) != 0 && bytes.size() <= static_cast<size_t>(kMaxBytes);) {
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        problem = fmt::format("{} cannot be read: {}", model_path, std::strerror(errno));
        break;
      }
      bytes.append(buffer, static_cast<size_t>(got));
    }
  }
  ::close(fd);
  check(problem.empty(), "{}", problem);
  return bytes;
}

}  // namespace

Subword::Subword(const std::string& model_path) : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const std::string bytes = model_bytes(model_path);
  auto damaged = [&](const std::string& why) {
    return Error(fmt::format("{} is not a SentencePiece model ({}); it was damaged — start afresh "
                             "with --overwrite", model_path, why));
  };
  if (bytes.empty()) throw damaged("the file is empty");
  // A malformed model can also make SentencePiece throw (its trie builder,
  // darts-clone, throws on an empty piece: found by fuzz/subword_fuzzer).
  sentencepiece::util::Status status;
  try {
    status = processor_->LoadFromSerializedProto(bytes);
  } catch (const std::exception&) {
    throw damaged("SentencePiece cannot build its tables from it");
  }
  // SentencePiece's own words name its source lines, not the file: not shown.
  if (!status.ok()) throw damaged(fmt::format("its {} bytes do not load as one", bytes.size()));
}

Subword::~Subword() = default;

std::vector<int> Subword::encode(const std::string& text) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  check(status.ok(), "subword: cannot encode '{}': {}", text, status.ToString());
  return ids;
}

std::string Subword::decode(const std::vector<int>& ids) const {
  std::vector<int> kept;
  for (int id : ids) {
    if (id == kEosId) break;
    if (id != kPadId && id != kBosId) kept.push_back(id);
  }
  std::string text;
  const auto status = processor_->Decode(kept, &text);
  check(status.ok(), "subword: cannot decode: {}", status.ToString());
  return text;
}

int Subword::vocab_size() const { return processor_->GetPieceSize(); }

}  // namespace rg
