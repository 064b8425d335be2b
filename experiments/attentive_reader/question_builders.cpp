// The questions the project makes itself: cloze questions from CBT book
// text, anonymisation, the synthetic task and the validation hold-out; see
// reading_data.h. The readers of existing question files are in
// reading_data.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/experiments/attentive_reader/question_text.h"
#include "rmsgrad/experiments/attentive_reader/reading_data.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/experiments/common/vocab.h"

namespace rg::reader {

using namespace detail;

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
      book.push_back({i + 1, split_tokens(lines[i])});
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
