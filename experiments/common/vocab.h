#pragma once
// Vocabulary: token ↔ id for the text experiments.
//
// Ids 0..3 are reserved, in this order: <pad> = 0 (padding, so a zero-filled
// batch is all padding), <unk> (any token not in the vocabulary), <s> and </s>
// (sentence start and end). The other tokens follow by falling count, ties in
// byte order, so the same counts give the same ids everywhere.
//
// The file format is plain text, one token per line, the line number (from 0)
// being the id; the four reserved tokens are the first four lines. Tokens are
// whitespace-free, as the corpora are whitespace-tokenised.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rg {

using TokenCounts = std::unordered_map<std::string, int64_t>;

// Adds the whitespace-separated tokens of `text` to `counts`.
void count_tokens(std::string_view text, TokenCounts& counts);
std::vector<std::string> split_tokens(std::string_view text);  // on spaces, tabs, newlines

class Vocab {
 public:
  static constexpr int32_t kPad = 0, kUnk = 1, kBos = 2, kEos = 3;
  static constexpr int32_t kReserved = 4;

  Vocab();  // just the reserved tokens

  // Tokens seen at least min_count times, the most frequent first, up to
  // max_size ids in all, reserved ones included (0: no limit).
  static Vocab from_counts(const TokenCounts& counts, int64_t min_count = 1, int64_t max_size = 0);

  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t id(std::string_view token) const;  // kUnk when absent
  bool contains(std::string_view token) const;
  const std::string& token(int32_t id) const;  // throws on an id outside [0, size)

  std::vector<int32_t> encode(std::string_view text) const;  // split_tokens, then id of each
  std::vector<int32_t> encode(std::span<const std::string> tokens) const;
  // Tokens joined by spaces, stopping at </s>, skipping <pad> and <s>.
  std::string decode(std::span<const int32_t> ids) const;

  void save(const std::string& path) const;
  // Throws rg::Error naming the file and line on a missing or misplaced
  // reserved token, an empty or repeated token, or an unreadable file.
  static Vocab load(const std::string& path);

 private:
  void add(std::string token);
  // Lets ids_ be searched with a string_view, without building a string.
  struct TransparentHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t, TransparentHash, std::equal_to<>> ids_;
};

}  // namespace rg
