#pragma once
// Subword segmentation with SentencePiece (Kudo & Richardson 2018), BPE
// model type, trained on the training text: the well-kept library, not a
// hand-written BPE. One joint model serves both languages (as Nematus'
// joint BPE does), so a word shared by German and English is split alike.
//
// Ids: 0 <pad>, 1 <unk>, 2 <s>, 3 </s>, then the learned pieces.
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace rg {

inline constexpr int kPadId = 0, kUnkId = 1, kBosId = 2, kEosId = 3;

class Subword {
 public:
  // Trains a BPE model of `vocab_size` pieces on `sentences`, in memory;
  // deterministic for the same input.
  static Subword trained(const std::vector<std::string>& sentences, int vocab_size);
  // The same, written to `model_path`.
  static void train(const std::vector<std::string>& sentences, int vocab_size, const std::string& model_path);

  explicit Subword(const std::string& model_path);  // loads a model file
  ~Subword();
  Subword(Subword&&) noexcept;
  Subword(const Subword&) = delete;
  Subword& operator=(const Subword&) = delete;

  // Writes the model to `model_path` (through a temporary file and a rename,
  // so an existing model is replaced whole or not at all).
  void save(const std::string& model_path) const;

  std::vector<int> encode(const std::string& text) const;  // without <s> / </s>
  std::string decode(const std::vector<int>& ids) const;   // stops at </s>, drops <pad>
  int vocab_size() const;

 private:
  Subword();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace rg
