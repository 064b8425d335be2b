#pragma once
// Text helpers the question readers (reading_data.cpp) and builders
// (question_builders.cpp) share. Internal to experiments/attentive_reader.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/file_status.h"
#include "rmsgrad/experiments/common/text_file.h"

namespace rg::reader::detail {

inline bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
inline bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool has_letter_or_digit(std::string_view token) {
  return std::any_of(token.begin(), token.end(), [](char c) { return is_letter(c) || (c >= '0' && c <= '9'); });
}

inline std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}
inline bool is_blank(std::string_view line) { return trim(line).empty(); }

// "@entity17" → 17; nullopt for any other token.
inline std::optional<int64_t> entity_id(std::string_view token) {
  constexpr std::string_view kPrefix = "@entity";
  if (token.size() <= kPrefix.size() || token.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const char* first = token.data() + kPrefix.size();
  const char* last = token.data() + token.size();
  int64_t id = 0;
  const auto [end, error] = std::from_chars(first, last, id);
  if (*first < '0' || *first > '9') return std::nullopt;  // from_chars would take "-1"
  if (error != std::errc() || end != last) return std::nullopt;
  return id;
}

// The lines of a file that must exist and hold some text.
inline std::vector<std::string> read_text(const std::string& path) {
  check(path_exists(path), "{}: no such file", path);
  check(is_file(path), "{}: not a regular file", path);
  std::vector<std::string> lines = read_lines(path);
  check(std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return !is_blank(l); }),
        "{}:1: the file is empty", path);
  return lines;
}

}  // namespace rg::reader::detail
