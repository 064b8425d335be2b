// The question readers: DeepMind .question files with the top4 filter, bAbI
// and CBT question files; see reading_data.h. The questions the project makes
// itself (cloze from books, anonymisation, the synthetic task, the hold-out)
// are in question_builders.cpp.
#include "rmsgrad/experiments/attentive_reader/reading_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <numeric>
#include <string_view>
#include <unordered_set>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/attentive_reader/question_text.h"
#include "rmsgrad/experiments/common/file_status.h"
#include "rmsgrad/experiments/common/text_file.h"
#include "rmsgrad/experiments/common/vocab.h"

namespace rg::reader {
namespace {

using namespace detail;

namespace fs = std::filesystem;

std::vector<std::string_view> split_on(std::string_view text, char separator) {
  std::vector<std::string_view> fields;
  for (size_t begin = 0;;) {
    const size_t end = text.find(separator, begin);
    fields.push_back(text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
    if (end == std::string_view::npos) return fields;
    begin = end + 1;
  }
}

// bAbI words: whitespace tokens with every ASCII punctuation mark cut off as
// a token of its own ("bathroom." → "bathroom" "."); case kept.
std::vector<std::string> words_and_punctuation(std::string_view text) {
  std::vector<std::string> tokens;
  for (const std::string& piece : split_tokens(text)) {
    std::string word;
    for (char c : piece) {
      if (std::ispunct(static_cast<unsigned char>(c))) {
        if (!word.empty()) tokens.push_back(std::move(word));
        word.clear();
        tokens.emplace_back(1, c);
      } else {
        word += c;
      }
    }
    if (!word.empty()) tokens.push_back(std::move(word));
  }
  return tokens;
}

// "12 text" → {12, "text"}, for bAbI and CBT lines; `line` is 1-based.
struct NumberedLine {
  int64_t number;
  std::string_view text;
};
NumberedLine numbered(const std::string& text, const std::string& path, size_t line) {
  int64_t number = 0;
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(text.data(), last, number);
  check(error == std::errc() && (end == last || *end == ' ' || *end == '\t'),
        "{}:{}: the line does not start with a line number: '{}'", path, line, text.substr(0, 40));
  return {number, std::string_view(end, static_cast<size_t>(last - end)).substr(end == last ? 0 : 1)};
}

}  // namespace

// ---- DeepMind CNN / Daily Mail ----------------------------------------------

Question read_deepmind_question(const std::string& path, int top) {
  check(top >= 0, "read_deepmind_question: top_sentences must be 0 (all) or positive, got {}", top);
  std::vector<std::string> lines = read_text(path);
  while (is_blank(lines.back())) lines.pop_back();
  const size_t n = lines.size();
  // The sections sit on fixed lines, each after a blank one: URL 1,
  // context 3, query 5, answer 7, and the entity lines from 9 on.
  static constexpr std::array<const char*, 5> kSections = {"URL", "context", "query", "answer", "entity lines"};
  for (size_t s = 0; s < kSections.size(); ++s) {
    const size_t line = 2 * s + 1;
    check(n >= line,
          "{}:{}: missing the {}: the file ends at line {} (a .question file holds URL, context, query, "
          "answer and @entityN:name lines, each section after a blank line)",
          path, line, kSections[s], n);
    check(!is_blank(lines[line - 1]), "{}:{}: missing the {}: the line is blank", path, line, kSections[s]);
    if (s + 1 < kSections.size() && n > line)
      check(is_blank(lines[line]), "{}:{}: expected a blank line after the {}", path, line + 1, kSections[s]);
  }
  Question q;
  q.document = split_tokens(lines[2]);
  q.query = split_tokens(lines[4]);
  q.origin = fmt::format("{}:5", path);
  check(std::find(q.query.begin(), q.query.end(), kPlaceholder) != q.query.end(), "{}:5: the query has no {}", path,
        kPlaceholder);
  const std::vector<std::string> answer = split_tokens(lines[6]);
  check(answer.size() == 1, "{}:7: the answer must be one token (@entityN), got '{}'", path, lines[6]);
  q.answer = answer[0];

  std::unordered_set<std::string> seen;
  for (size_t line = 9; line <= n; ++line) {
    const std::string_view text = trim(lines[line - 1]);
    const size_t colon = text.find(':');
    const bool well_formed = colon != std::string_view::npos && entity_id(text.substr(0, colon)).has_value();
    check(well_formed, "{}:{}: malformed entity line '{}' (expected @entityN:surface name)", path, line, text);
    std::string entity(text.substr(0, colon));
    check(seen.insert(entity).second, "{}:{}: entity {} is listed twice", path, line, entity);
    q.candidates.push_back(std::move(entity));
  }
  check(seen.count(q.answer) > 0, "{}:7: the answer {} is not among the entity lines (9–{})", path, q.answer, n);
  if (top > 0) q.document = top_sentences(q.document, q.query, top);
  return q;
}

std::vector<Question> read_deepmind_dir(const std::string& dir, int top, int64_t limit) {
  check(limit >= 0, "read_deepmind_dir: limit must be 0 (all) or positive, got {}", limit);
  check(is_folder(dir), "{}: no such directory", dir);
  std::vector<std::string> paths;
  std::error_code ec;
  for (const fs::directory_entry& entry : entries_of(dir))
    if (entry.is_regular_file(ec) && entry.path().extension() == ".question") paths.push_back(entry.path().string());
  check(!paths.empty(), "{}: no *.question files in the directory", dir);
  std::sort(paths.begin(), paths.end());
  if (limit > 0 && static_cast<int64_t>(paths.size()) > limit) paths.resize(static_cast<size_t>(limit));
  std::vector<Question> questions;
  for (size_t i = 0; i < paths.size(); ++i) {
    questions.push_back(read_deepmind_question(paths[i], top));
    questions.back().group = static_cast<int64_t>(i);
  }
  return questions;
}

std::vector<std::string> top_sentences(const std::vector<std::string>& document, const std::vector<std::string>& query,
                                       int count) {
  check(count > 0, "top_sentences: count must be positive, got {}", count);
  // Sentences as [begin, end) token ranges, each closed by its "." "!" or "?".
  std::vector<std::pair<size_t, size_t>> sentences;
  size_t begin = 0;
  for (size_t i = 0; i < document.size(); ++i)
    if (document[i] == "." || document[i] == "!" || document[i] == "?") {
      sentences.emplace_back(begin, i + 1);
      begin = i + 1;
    }
  if (begin < document.size()) sentences.emplace_back(begin, document.size());
  if (sentences.size() <= static_cast<size_t>(count)) return document;

  // Score: how many distinct query words (tokens with a letter or digit, so
  // punctuation shared by every sentence does not count) the sentence holds.
  std::unordered_set<std::string_view> query_words;
  for (const std::string& w : query)
    if (has_letter_or_digit(w)) query_words.insert(w);
  std::vector<int64_t> shared(sentences.size(), 0);
  for (size_t s = 0; s < sentences.size(); ++s) {
    std::unordered_set<std::string_view> counted;
    for (size_t i = sentences[s].first; i < sentences[s].second; ++i)
      if (query_words.count(document[i]) > 0 && counted.insert(document[i]).second) ++shared[s];
  }
  std::vector<size_t> order(sentences.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Stable: among equal scores the earlier sentence comes first.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return shared[a] > shared[b]; });
  order.resize(static_cast<size_t>(count));
  std::sort(order.begin(), order.end());
  std::vector<std::string> kept;
  for (size_t s : order)
    kept.insert(kept.end(), document.begin() + static_cast<std::ptrdiff_t>(sentences[s].first),
                document.begin() + static_cast<std::ptrdiff_t>(sentences[s].second));
  return kept;
}

// ---- bAbI ------------------------------------------------------------------

std::vector<Question> read_babi(const std::string& path) {
  const std::vector<std::string> lines = read_text(path);
  std::vector<Question> questions;
  std::vector<std::string> answers;  // every answer of the file, in order of first occurrence
  std::unordered_set<std::string> answer_set;
  std::vector<std::string> story;  // the current story's statements so far
  int64_t previous = 0, story_index = -1;
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t line = i + 1;
    if (is_blank(lines[i])) continue;
    const auto [number, text] = numbered(lines[i], path, line);
    if (number == 1) {
      ++story_index;
      story.clear();
    } else {
      check(story_index >= 0, "{}:{}: the first story starts at line number {}, not 1", path, line, number);
      check(number == previous + 1,
            "{}:{}: line number {} after {} (within a story the numbers count up by one; 1 "
            "starts a new story)",
            path, line, number, previous);
    }
    previous = number;
    const size_t tab = text.find('\t');
    if (tab == std::string_view::npos) {
      check(trim(text).empty() || trim(text).back() != '?',
            "{}:{}: a question without a tab-separated answer (expected 'N question?<TAB>answer<TAB>facts')", path,
            line);
      for (std::string& w : words_and_punctuation(text)) story.push_back(std::move(w));
      continue;
    }
    const std::vector<std::string_view> fields = split_on(text, '\t');
    Question q;
    q.document = story;
    q.query = words_and_punctuation(fields[0]);
    q.answer = std::string(trim(fields[1]));
    q.group = story_index;
    q.origin = fmt::format("{}:{}", path, line);
    check(!q.query.empty(), "{}:{}: the question before the tab is empty", path, line);
    check(!q.answer.empty(),
          "{}:{}: a question without a tab-separated answer (expected "
          "'N question?<TAB>answer<TAB>facts')",
          path, line);
    if (answer_set.insert(q.answer).second) answers.push_back(q.answer);
    questions.push_back(std::move(q));
  }
  check(!questions.empty(), "{}:{}: the file ends without a question line ('N question?<TAB>answer<TAB>facts')", path,
        lines.size());

  // Candidates: the file's answers found in the document, or all of them
  // when this answer is not in it (yes/no, counting, path-finding tasks).
  for (Question& q : questions) {
    const std::unordered_set<std::string_view> words(q.document.begin(), q.document.end());
    if (words.count(q.answer) == 0) {
      q.candidates = answers;
      continue;
    }
    for (const std::string& a : answers)
      if (words.count(a) > 0) q.candidates.push_back(a);
  }
  return questions;
}

// ---- Children's Book Test --------------------------------------------------

std::vector<Question> read_cbt_questions(const std::string& path) {
  const std::vector<std::string> lines = read_text(path);
  std::vector<Question> questions;
  Question q;
  int64_t expected = 1;  // the number the next line of the current question carries
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t line = i + 1;
    if (is_blank(lines[i])) {
      check(expected == 1,
            "{}:{}: a blank line after line {} of a question (a question is 21 lines numbered 1 to "
            "21)",
            path, line, expected - 1);
      continue;
    }
    const auto [number, text] = numbered(lines[i], path, line);
    check(number == expected,
          "{}:{}: line numbered {} where {} was expected (a question is 21 lines numbered 1 to "
          "21)",
          path, line, number, expected);
    if (number < 21) {
      for (std::string& w : split_tokens(text)) q.document.push_back(std::move(w));
      ++expected;
      continue;
    }
    // "21 query<TAB>answer<TAB><TAB>cand1|cand2|…": the candidates are the last field.
    const std::vector<std::string_view> fields = split_on(text, '\t');
    const bool has_fields = fields.size() >= 3 && !trim(fields[1]).empty() && !trim(fields.back()).empty();
    check(has_fields,
          "{}:{}: line 21 needs a tab-separated answer and candidates "
          "('21 query<TAB>answer<TAB><TAB>cand1|cand2|…')",
          path, line);
    q.query = split_tokens(fields[0]);
    bool has_slot = false;
    for (std::string& w : q.query)
      if (w == "XXXXX") w = kPlaceholder, has_slot = true;
    check(has_slot, "{}:{}: the query has no XXXXX", path, line);
    q.answer = std::string(trim(fields[1]));
    std::unordered_set<std::string_view> seen;
    for (std::string_view candidate : split_on(fields.back(), '|')) {
      candidate = trim(candidate);
      check(!candidate.empty(), "{}:{}: an empty candidate in '{}'", path, line, fields.back());
      if (seen.insert(candidate).second) q.candidates.emplace_back(candidate);
    }
    check(seen.count(q.answer) > 0, "{}:{}: the answer '{}' is not among the candidates {}", path, line, q.answer,
          fields.back());
    q.group = static_cast<int64_t>(questions.size());
    q.origin = fmt::format("{}:{}", path, line);
    questions.push_back(std::move(q));
    q = Question{};
    expected = 1;
  }
  check(expected == 1, "{}:{}: the file ends after line {} of a question (a question is 21 lines)", path, lines.size(),
        expected - 1);
  return questions;
}

}  // namespace rg::reader
