// Vocabulary: build from counts, look up, save and load (see vocab.h).
#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/experiments/common/vocab.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

const char* const kReservedTokens[Vocab::kReserved] = {"<pad>", "<unk>", "<s>", "</s>"};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

template <class Visit>
void for_each_token(std::string_view text, Visit&& visit) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) visit(text.substr(start, i - start));
  }
}

}  // namespace

void count_tokens(std::string_view text, TokenCounts& counts) {
  for_each_token(text, [&](std::string_view token) { ++counts[std::string(token)]; });
}

std::vector<std::string> split_tokens(std::string_view text) {
  std::vector<std::string> tokens;
  for_each_token(text, [&](std::string_view token) { tokens.emplace_back(token); });
  return tokens;
}

Vocab::Vocab() {
  for (const char* token : kReservedTokens) add(token);
}

void Vocab::add(std::string token) {
  auto id = static_cast<int32_t>(tokens_.size());
  ids_.emplace(token, id);
  tokens_.push_back(std::move(token));
}

Vocab Vocab::from_counts(const TokenCounts& counts, int64_t min_count, int64_t max_size) {
  check(max_size == 0 || max_size >= kReserved, "Vocab::from_counts: max_size {} leaves no room for the {} reserved tokens",
        max_size, kReserved);
  Vocab vocab;
  std::vector<std::pair<std::string, int64_t>> kept;
  for (const auto& [token, count] : counts)
    if (count >= min_count && !vocab.contains(token)) kept.emplace_back(token, count);
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  for (auto& [token, count] : kept) {
    if (max_size > 0 && vocab.size() >= max_size) break;
    check(!token.empty() && std::none_of(token.begin(), token.end(), is_space),
          "Vocab::from_counts: token '{}' is empty or holds whitespace", token);
    vocab.add(std::move(token));
  }
  return vocab;
}

int32_t Vocab::id(std::string_view token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? kUnk : it->second;
}

bool Vocab::contains(std::string_view token) const { return ids_.find(token) != ids_.end(); }

const std::string& Vocab::token(int32_t id) const {
  check(id >= 0 && id < size(), "Vocab::token: id {} is outside [0, {})", id, size());
  return tokens_[static_cast<size_t>(id)];
}

std::vector<int32_t> Vocab::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  for_each_token(text, [&](std::string_view token) { ids.push_back(id(token)); });
  return ids;
}

std::vector<int32_t> Vocab::encode(std::span<const std::string> tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  for (const std::string& token : tokens) ids.push_back(id(token));
  return ids;
}

std::string Vocab::decode(std::span<const int32_t> ids) const {
  std::string text;
  for (int32_t i : ids) {
    if (i == kEos) break;
    if (i == kPad || i == kBos) continue;
    if (!text.empty()) text += ' ';
    text += token(i);
  }
  return text;
}

void Vocab::save(const std::string& path) const {
  std::string text;
  for (const std::string& token : tokens_) text += token + '\n';
  write_file_atomically(path, text);  // whole, never through a link
}

Vocab Vocab::load(const std::string& path) {
  std::ifstream in(path);
  check(in.is_open(), "cannot read the vocabulary '{}': {}", path, std::strerror(errno));
  Vocab vocab;
  int64_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // written on Windows
    if (line_number <= kReserved) {
      check(line == kReservedTokens[line_number - 1], "vocabulary '{}' line {}: expected the reserved token {}, found '{}'",
            path, line_number, kReservedTokens[line_number - 1], line);
      continue;
    }
    check(!line.empty(), "vocabulary '{}' line {}: empty token", path, line_number);
    check(!vocab.contains(line), "vocabulary '{}' line {}: '{}' repeats line {}", path, line_number, line,
          vocab.id(line) + 1);
    vocab.add(line);
  }
  check(line_number >= kReserved, "vocabulary '{}': {} lines, fewer than the {} reserved tokens", path, line_number,
        kReserved);
  return vocab;
}

}  // namespace rg
