#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/experiments/translation/subword.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
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

Subword::Subword(const std::string& model_path) : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  check(path_exists(model_path), "subword: model {} does not exist", model_path);
  // A malformed model can also make SentencePiece throw (its trie builder,
  // darts-clone, throws on an empty piece: found by fuzz/subword_fuzzer).
  sentencepiece::util::Status status;
  try {
    status = processor_->Load(model_path);
  } catch (const std::exception& e) {
    throw Error(fmt::format("subword: cannot load {}: {}", model_path, e.what()));
  }
  check(status.ok(), "subword: cannot load {}: {}", model_path, status.ToString());
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
