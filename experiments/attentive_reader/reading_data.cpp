// Question readers for the four sources, the top4 passage filter,
// anonymisation, the synthetic task and the hold-out; see reading_data.h.
#include "experiments/attentive_reader/reading_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <iterator>
#include <numeric>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/random.h"
#include "experiments/common/batching.h"
#include "experiments/common/text_file.h"

namespace rg::reader {
namespace {

namespace fs = std::filesystem;

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool has_letter_or_digit(std::string_view token) {
  return std::any_of(token.begin(), token.end(), [](char c) { return is_letter(c) || (c >= '0' && c <= '9'); });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}
bool is_blank(std::string_view line) { return trim(line).empty(); }

std::vector<std::string> split_whitespace(std::string_view text) {
  std::istringstream in{std::string(text)};
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

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
  for (const std::string& piece : split_whitespace(text)) {
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

// "@entity17" → 17; nullopt for any other token.
std::optional<int64_t> entity_id(std::string_view token) {
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
std::vector<std::string> read_text(const std::string& path) {
  check(fs::exists(path), "{}: no such file", path);
  check(fs::is_regular_file(path), "{}: not a regular file", path);
  std::vector<std::string> lines = read_lines(path);
  check(std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return !is_blank(l); }),
        "{}:1: the file is empty", path);
  return lines;
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
  q.document = split_whitespace(lines[2]);
  q.query = split_whitespace(lines[4]);
  q.origin = fmt::format("{}:5", path);
  check(std::find(q.query.begin(), q.query.end(), kPlaceholder) != q.query.end(), "{}:5: the query has no {}", path,
        kPlaceholder);
  const std::vector<std::string> answer = split_whitespace(lines[6]);
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
  check(fs::is_directory(dir), "{}: no such directory", dir);
  std::vector<std::string> paths;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".question") paths.push_back(entry.path().string());
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
      for (std::string& w : split_whitespace(text)) q.document.push_back(std::move(w));
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
    q.query = split_whitespace(fields[0]);
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

// ---- Cloze questions from CBT book text ------------------------------------

namespace {

struct Sentence {
  size_t line;  // 1-based, for the origin
  std::vector<std::string> tokens;
};

// A capitalised word, capitalisation standing in for a named-entity tagger:
// an upper-case letter, then letters only, at least one lower-case
// ("Prigio", "McLeod"; not "I", not the heading "CHAPTER", not "p9.jpg").
bool is_capitalised(const std::string& w) {
  if (w.size() < 2 || w[0] < 'A' || w[0] > 'Z') return false;
  return std::all_of(w.begin(), w.end(), is_letter) &&
         std::any_of(w.begin(), w.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

// Positions of the capitalised words of a line that do not open a sentence.
// A word opens one when no other word comes between it and the line's start,
// a "." "!" "?" ":" or an opening quote `` or ` (CBT lines often hold more
// than one sentence, and quoted speech).
std::vector<size_t> name_positions(const std::vector<std::string>& tokens) {
  std::vector<size_t> positions;
  bool opening = true;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (t == "." || t == "!" || t == "?" || t == ":" || t == "``" || t == "`") {
      opening = true;
    } else if (has_letter_or_digit(t)) {
      if (!opening && is_capitalised(t)) positions.push_back(i);
      opening = false;
    }
  }
  return positions;
}

// One window: context sentences, then the query sentence. Nothing when the
// query has no usable answer or the context gives no second candidate.
std::optional<Question> cloze_from_window(const Sentence* window, size_t context, int max_candidates,
                                          const std::string& path, Generator& gen) {
  Question q;
  std::vector<std::string> names;  // the context's distinct names, in order of first occurrence
  std::unordered_set<std::string> name_set;
  for (size_t s = 0; s < context; ++s) {
    const std::vector<std::string>& tokens = window[s].tokens;
    for (size_t i : name_positions(tokens))
      if (name_set.insert(tokens[i]).second) names.push_back(tokens[i]);
    q.document.insert(q.document.end(), tokens.begin(), tokens.end());
  }
  const std::unordered_set<std::string_view> context_words(q.document.begin(), q.document.end());
  const Sentence& last = window[context];
  std::vector<std::string> answers;  // the query sentence's names that occur in the context
  for (size_t i : name_positions(last.tokens)) {
    const std::string& w = last.tokens[i];
    if (context_words.count(w) > 0 && std::find(answers.begin(), answers.end(), w) == answers.end())
      answers.push_back(w);
  }
  if (answers.empty()) return std::nullopt;
  q.answer = answers.size() == 1 ? answers[0] : answers[static_cast<size_t>(gen.randint(std::ssize(answers)))];

  std::vector<std::string> others;
  for (const std::string& name : names)
    if (name != q.answer) others.push_back(name);
  const size_t wanted = static_cast<size_t>(max_candidates - 1);
  if (others.size() > wanted) {
    shuffle(others, gen);
    others.resize(wanted);
  }
  if (others.empty()) return std::nullopt;
  q.candidates = std::move(others);
  q.candidates.push_back(q.answer);
  std::sort(q.candidates.begin(), q.candidates.end());  // alphabetical, as in CBT's own files: the order tells nothing
  for (const std::string& w : last.tokens) q.query.push_back(w == q.answer ? std::string(kPlaceholder) : w);
  q.origin = fmt::format("{}:{}", path, last.line);
  return q;
}

}  // namespace

std::vector<Question> build_cbt_cloze(const std::string& book_path, const ClozeOptions& options) {
  check(options.context_sentences > 0 && options.max_candidates >= 2 && options.limit >= 0,
        "build_cbt_cloze: context sentences ({}) must be positive, max candidates ({}) at least 2, limit ({}) not "
        "negative",
        options.context_sentences, options.max_candidates, options.limit);
  const std::vector<std::string> lines = read_text(book_path);
  const size_t context = static_cast<size_t>(options.context_sentences), window = context + 1;
  Generator gen(options.seed);
  std::vector<Question> questions;
  auto full = [&] { return options.limit > 0 && std::ssize(questions) >= options.limit; };
  // Cuts one book's sentences into windows of context + 1, stride context + 1.
  auto take_windows = [&](const std::vector<Sentence>& book) {
    for (size_t begin = 0; begin + window <= book.size() && !full(); begin += window) {
      std::optional<Question> q =
          cloze_from_window(book.data() + begin, context, options.max_candidates, book_path, gen);
      if (!q) continue;
      q->group = std::ssize(questions);
      questions.push_back(std::move(*q));
    }
  };
  std::vector<Sentence> book;
  for (size_t i = 0; i < lines.size() && !full(); ++i) {
    if (lines[i].rfind("_BOOK_TITLE_", 0) == 0) {
      take_windows(book);
      book.clear();
    } else if (!is_blank(lines[i])) {
      book.push_back({i + 1, split_whitespace(lines[i])});
    }
  }
  take_windows(book);
  check(!questions.empty(),
        "{}:{}: no cloze question in the file (a question needs {} sentences of one book, the last "
        "with a name (a capitalised word not opening a sentence) that occurs in the {} before)",
        book_path, lines.size(), window, context);
  return questions;
}

// ---- Anonymisation ---------------------------------------------------------

Question anonymize(const Question& q) {
  std::unordered_map<std::string, std::string> ids;  // candidate → @entityK
  const std::unordered_set<std::string> candidates(q.candidates.begin(), q.candidates.end());
  check(candidates.count(q.answer) > 0, "anonymize: {}: the answer '{}' is not a candidate", q.origin, q.answer);
  auto give_id = [&](const std::string& token) {
    if (ids.count(token) == 0) ids.emplace(token, fmt::format("@entity{}", ids.size()));
  };
  for (const std::string& w : q.document)
    if (candidates.count(w) > 0) give_id(w);
  for (const std::string& c : q.candidates) give_id(c);
  const size_t candidate_ids = ids.size();
  // Tokens that already look like @entityN but are not candidates get ids
  // after the candidates', so that no renamed candidate collides with them.
  for (const auto* tokens : {&q.document, &q.query})
    for (const std::string& w : *tokens)
      if (entity_id(w).has_value()) give_id(w);

  auto rename = [&](const std::string& w) {
    const auto it = ids.find(w);
    return it == ids.end() ? w : it->second;
  };
  Question out;
  out.document.reserve(q.document.size());
  for (const std::string& w : q.document) out.document.push_back(rename(w));
  for (const std::string& w : q.query) out.query.push_back(rename(w));
  out.answer = rename(q.answer);
  for (size_t k = 0; k < candidate_ids; ++k) out.candidates.push_back(fmt::format("@entity{}", k));
  out.group = q.group;
  out.origin = q.origin;
  return out;
}

int64_t entity_count(const std::vector<Question>& questions) {
  int64_t count = 0;
  auto see = [&](const std::string& w) {
    if (const std::optional<int64_t> id = entity_id(w)) count = std::max(count, *id + 1);
  };
  for (const Question& q : questions) {
    for (const std::string& w : q.document) see(w);
    for (const std::string& w : q.query) see(w);
    for (const std::string& w : q.candidates) see(w);
    see(q.answer);
  }
  return count;
}

// ---- The synthetic task ----------------------------------------------------

std::vector<Question> synthetic_questions(int64_t count, uint64_t seed) {
  static constexpr std::array<const char*, 10> kVerbs = {"owns", "paints", "sells",   "hides",  "finds",
                                                         "buys", "breaks", "carries", "cleans", "wants"};
  static constexpr std::array<const char*, 10> kNouns = {"book",  "car",  "lamp", "key", "boat",
                                                         "chair", "coat", "ring", "map", "clock"};
  constexpr int64_t kEntities = 10;
  check(count >= 0, "synthetic_questions: count must not be negative, got {}", count);
  Generator gen(seed);
  // Permuted afresh per question: fact f is about entities[f], with verb
  // verbs[f] and noun nouns[f], so no two facts share an entity, a verb or a noun.
  std::vector<int64_t> entities(kEntities), verbs(kVerbs.size()), nouns(kNouns.size());
  std::vector<Question> questions;
  for (int64_t n = 0; n < count; ++n) {
    const int64_t facts = 2 + gen.randint(3);
    for (auto* order : {&entities, &verbs, &nouns}) {
      std::iota(order->begin(), order->end(), int64_t{0});
      shuffle(*order, gen);
    }
    Question q;
    for (int64_t f = 0; f < facts; ++f) {
      const std::string entity = fmt::format("@entity{}", entities[f]);
      q.document.insert(q.document.end(), {entity, kVerbs[verbs[f]], "the", kNouns[nouns[f]], "."});
      q.candidates.push_back(entity);
    }
    const int64_t asked = gen.randint(facts);
    q.query = {kPlaceholder, kVerbs[verbs[asked]], "the", kNouns[nouns[asked]], "."};
    q.answer = q.candidates[static_cast<size_t>(asked)];
    q.group = n;
    q.origin = fmt::format("synthetic(seed {}):{}", seed, n);
    questions.push_back(std::move(q));
  }
  return questions;
}

// ---- The validation hold-out -----------------------------------------------

Split hold_out_tenth(std::vector<Question> questions) {
  Split split;
  for (Question& q : questions) (q.group % 10 == 9 ? split.valid : split.train).push_back(std::move(q));
  return split;
}

}  // namespace rg::reader
