// The synthetic translation task: determinism, counts, lengths and
// punctuation, and the grammar itself — the source verb is last and its
// translation comes right after the English subject, the verbs, determiners,
// adjective endings and English noun forms agree with the subject, questions
// take Does/Do, relative pronouns show the gap — checked by parsing the text
// with the generator's lexicon, over 20000 pairs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/translation/synthetic_translation.h"
#include "test_util.h"

using namespace rg;

namespace {

using Words = std::vector<std::string>;

Words split(const std::string& text) {
  std::istringstream in(text);
  Words words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Lowercase, without the punctuation attached to it.
std::string bare(std::string w) {
  while (!w.empty() && (w.back() == '.' || w.back() == ',' || w.back() == '?')) w.pop_back();
  for (char& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return w;
}

struct Form {
  int index;
  bool plural;
};

// Word form → (lexicon entry, plural?) for the source and target verbs and
// nouns, and adjective form → slot (0 m, 1 f, 2 n, 3 plural).
struct Parser {
  std::map<std::string, Form> source_verbs, target_verbs, source_nouns;
  std::map<std::string, std::pair<int, int>> source_adjectives;  // form → (adjective, slot)
  Parser() {
    const SyntheticLexicon& lex = synthetic_lexicon();
    for (int i = 0; i < static_cast<int>(lex.verbs.size()); ++i) {
      source_verbs[lex.verbs[i].source_singular] = {i, false};
      source_verbs[lex.verbs[i].source_plural] = {i, true};
      target_verbs[lex.verbs[i].target_singular] = {i, false};
      target_verbs[lex.verbs[i].target_plural] = {i, true};
    }
    for (int i = 0; i < static_cast<int>(lex.nouns.size()); ++i) {
      source_nouns[lex.nouns[i].source_plural] = {i, true};
      source_nouns[lex.nouns[i].source_singular] = {i, false};  // invariant plural: number from elsewhere
    }
    const char* endings[4] = {"er", "e", "es", "en"};
    for (int i = 0; i < static_cast<int>(lex.adjectives.size()); ++i)
      for (int slot = 0; slot < 4; ++slot)
        source_adjectives[std::string(lex.adjectives[i].source) + endings[slot]] = {i, slot};
  }
  int count_verbs(const Words& source) const {
    auto is_verb = [&](const std::string& w) { return source_verbs.count(bare(w)) > 0; };
    return static_cast<int>(std::count_if(source.begin(), source.end(), is_verb));
  }
};

int gender_slot(char gender) { return gender == 'm' ? 0 : gender == 'f' ? 1 : 2; }

const ParallelText& corpus() {
  static const ParallelText text = synthetic_translation({});
  return text;
}

}  // namespace

TEST_CASE("synthetic translation: deterministic per seed, counts, lengths, punctuation") {
  SyntheticTranslationOptions options;
  options.pairs = 300;
  const ParallelText a = synthetic_translation(options), b = synthetic_translation(options);
  CHECK(a.source == b.source);
  CHECK(a.target == b.target);
  options.seed = 2;
  const ParallelText c = synthetic_translation(options);
  CHECK(a.source != c.source);
  CHECK(a.target != c.target);

  const ParallelText& text = corpus();
  REQUIRE(text.source.size() == 20000);
  REQUIRE(text.target.size() == 20000);
  std::map<int, int> lengths;
  for (size_t i = 0; i < text.size(); ++i) {
    const std::string& s = text.source[i];
    const std::string& t = text.target[i];
    const Words sw = split(s), tw = split(t);
    ++lengths[static_cast<int>(sw.size())];
    CHECK(sw.size() >= 3);
    CHECK(sw.size() <= 25);
    CHECK(std::isupper(static_cast<unsigned char>(s[0])));
    CHECK(std::isupper(static_cast<unsigned char>(t[0])));
    const bool question = s.back() == '?';
    CHECK((question || s.back() == '.'));
    CHECK(t.back() == s.back());
    CHECK(tw.size() == sw.size() + (question ? 1 : 0));
    // Lowercase ASCII words, punctuation only at a word's end.
    for (const Words* words : {&sw, &tw})
      for (size_t k = 0; k < words->size(); ++k) {
        const std::string w = k == 0 ? bare((*words)[k]) : (*words)[k];
        const std::string stem = w.substr(0, w.find_first_of(".,?"));
        CHECK(!stem.empty());
        CHECK(std::all_of(stem.begin(), stem.end(), [](char ch) { return ch >= 'a' && ch <= 'z'; }));
      }
  }
  // Lengths spread over the whole range, about uniformly.
  for (int n = 3; n <= 25; ++n) CHECK(lengths[n] > 20000 / 23 / 2);

  options = {};
  options.pairs = 200, options.min_words = options.max_words = 3;
  for (const std::string& s : synthetic_translation(options).source) CHECK(split(s).size() == 3);
  options.min_words = 40, options.max_words = 80;
  for (const std::string& s : synthetic_translation(options).source) {
    CHECK(split(s).size() >= 40);
    CHECK(split(s).size() <= 80);
  }
}

TEST_CASE("synthetic translation: bad options are errors") {
  auto run = [](int64_t pairs, int min_words, int max_words) {
    const SyntheticTranslationOptions options{.pairs = pairs, .min_words = min_words, .max_words = max_words};
    return test::error_of([&] { synthetic_translation(options); });
  };
  CHECK(run(0, 3, 25).find("pairs must be positive") != std::string::npos);
  CHECK(run(10, 2, 25).find("min_words must be at least 3") != std::string::npos);
  CHECK(run(10, 9, 8).find("min_words 9 is greater than max_words 8") != std::string::npos);
  CHECK(run(10, 3, 81).find("max_words must be at most 80") != std::string::npos);
}

TEST_CASE("synthetic translation: the lexicon has no form in two places, vocabularies of 50-200 words") {
  const SyntheticLexicon& lex = synthetic_lexicon();
  std::map<std::string, std::string> source_owner, target_owner;  // form → the entry it belongs to
  auto own = [](std::map<std::string, std::string>& owner, const std::string& form, const std::string& entry) {
    auto [it, fresh] = owner.emplace(form, entry);
    CHECK_MESSAGE((fresh || it->second == entry), form << " belongs to " << it->second << " and " << entry);
  };
  for (const auto& n : lex.nouns) {
    own(source_owner, n.source_singular, n.source_singular), own(source_owner, n.source_plural, n.source_singular);
    own(target_owner, n.target_singular, n.target_singular), own(target_owner, n.target_plural, n.target_singular);
  }
  for (const auto& v : lex.verbs) {
    own(source_owner, v.source_singular, v.source_plural), own(source_owner, v.source_plural, v.source_plural);
    own(target_owner, v.target_singular, v.target_plural), own(target_owner, v.target_plural, v.target_plural);
  }
  for (const auto& [form, adjective] : Parser().source_adjectives) own(source_owner, form, "adjective");
  for (const auto* table : {&lex.adjectives, &lex.prepositions, &lex.conjunctions})
    for (const auto& w : *table) own(target_owner, w.target, w.target);

  std::set<std::string> source_vocab, target_vocab;
  for (size_t i = 0; i < corpus().size(); ++i) {
    for (const std::string& w : split(corpus().source[i])) source_vocab.insert(bare(w));
    for (const std::string& w : split(corpus().target[i])) target_vocab.insert(bare(w));
  }
  MESSAGE("vocabulary: source ", source_vocab.size(), ", target ", target_vocab.size());
  CHECK(source_vocab.size() >= 50);
  CHECK(source_vocab.size() <= 200);
  CHECK(target_vocab.size() >= 50);
  CHECK(target_vocab.size() <= 200);
}

TEST_CASE("synthetic translation: simple clauses reorder SOV to SVO with agreement") {
  // Simple: one clause, a statement, no relative clause (one verb, no comma).
  // Source: Det Noun Adj* ... Verb.   Target: Det Adj* Noun Verb ...
  const Parser parse;
  const SyntheticLexicon& lex = synthetic_lexicon();
  // nominative[definite][slot], slot 0 m, 1 f, 2 n, 3 plural.
  const char* const nominative[2][4] = {{"ein", "eine", "ein", "einige"}, {"der", "die", "das", "die"}};
  int simple = 0, plural_subjects = 0;
  for (size_t i = 0; i < corpus().size(); ++i) {
    const Words s = split(corpus().source[i]), t = split(corpus().target[i]);
    const std::string& text = corpus().source[i];
    if (text.back() != '.' || text.find(',') != std::string::npos || parse.count_verbs(s) != 1) continue;
    ++simple;
    CAPTURE(corpus().source[i]);
    CAPTURE(corpus().target[i]);
    // The source subject: Det Noun Adj*, agreeing in gender and number. The
    // number shows on the noun, or for "lehrer"-like nouns on the determiner.
    const std::string det = bare(s[0]);
    REQUIRE(parse.source_nouns.count(s[1]));
    const SyntheticNoun& noun = lex.nouns[parse.source_nouns.at(s[1]).index];
    const bool invariant = std::string(noun.source_singular) == noun.source_plural;
    const bool plural = parse.source_nouns.at(s[1]).plural || (invariant && (det == "die" || det == "einige"));
    const bool definite = det == "der" || det == "die" || det == "das";
    const int slot = plural ? 3 : gender_slot(noun.gender);
    CHECK(det == nominative[definite][slot]);
    size_t adjectives = 0;
    while (2 + adjectives < s.size() && parse.source_adjectives.count(s[2 + adjectives])) {
      CHECK(parse.source_adjectives.at(s[2 + adjectives]).second == slot);
      ++adjectives;
    }
    if (adjectives == 2) CHECK(s[2] != s[3]);
    plural_subjects += plural;
    // The source verb is last and agrees with the subject.
    const Form source_verb = parse.source_verbs.at(bare(s.back()));
    CHECK(source_verb.plural == plural);
    // The target: Det Adj* Noun, then the verb — the source's last word.
    const bool vowel = std::string("aeiou").find(t[1][0]) != std::string::npos;
    CHECK(bare(t[0]) == (definite ? "the" : plural ? "some" : vowel ? "an" : "a"));
    for (size_t k = 0; k < adjectives; ++k)
      CHECK(t[1 + k] == lex.adjectives[parse.source_adjectives.at(s[2 + k]).first].target);
    CHECK(t[1 + adjectives] == (plural ? noun.target_plural : noun.target_singular));
    REQUIRE(parse.target_verbs.count(bare(t[2 + adjectives])));
    const Form target_verb = parse.target_verbs.at(bare(t[2 + adjectives]));
    CHECK(target_verb.index == source_verb.index);
    CHECK(target_verb.plural == plural);
    // Transitive verbs are followed by their object in English, intransitive by a preposition or nothing.
    if (lex.verbs[source_verb.index].transitive) CHECK(t.size() > 3 + adjectives);
  }
  MESSAGE(simple, " simple sentences, ", plural_subjects, " with a plural subject");
  CHECK(simple > 2000);
  CHECK(plural_subjects > simple / 5);
  CHECK(plural_subjects < simple / 2);
}

TEST_CASE("synthetic translation: questions take Does/Do, relative pronouns show the gap") {
  const Parser parse;
  int questions = 0, subject_gaps = 0, object_gaps = 0;
  for (size_t i = 0; i < corpus().size(); ++i) {
    const Words s = split(corpus().source[i]), t = split(corpus().target[i]);
    CAPTURE(corpus().source[i]);
    CAPTURE(corpus().target[i]);
    if (corpus().source[i].back() == '?') {
      // Sieht der hund ...? → Does the dog see ...?
      ++questions;
      REQUIRE(parse.source_verbs.count(bare(s[0])));
      const Form verb = parse.source_verbs.at(bare(s[0]));
      CHECK(t[0] == (verb.plural ? "Do" : "Does"));
      const std::string base_form = synthetic_lexicon().verbs[verb.index].target_plural;
      const auto base = std::find_if(t.begin(), t.end(), [&](const std::string& w) { return bare(w) == base_form; });
      CHECK(base != t.end());
    }
    // A relative clause on the first subject: "Det Noun Adj*, RelPron ..." →
    // "that Verb ..." after a subject gap (der/die/das), "that Det ..." after an
    // object gap (welchen/welche/welches).
    const int start = corpus().source[i].back() == '?' ? 1 : 0;
    size_t comma = start;
    while (comma < s.size() && s[comma].back() != ',') ++comma;
    if (comma + 1 >= s.size() || comma > static_cast<size_t>(start) + 3 || parse.source_verbs.count(bare(s[comma])))
      continue;  // no relative clause on the first subject (a comma before a conjunction follows a verb)
    const std::string pronoun = s[comma + 1];
    const auto that = std::find(t.begin(), t.end(), "that");
    REQUIRE(that + 1 < t.end());
    if (pronoun.rfind("welch", 0) == 0) {
      ++object_gaps;
      CHECK(!parse.target_verbs.count(*(that + 1)));
    } else {
      ++subject_gaps;
      CHECK((pronoun == "der" || pronoun == "die" || pronoun == "das"));
      CHECK(parse.target_verbs.count(*(that + 1)));
    }
  }
  MESSAGE(questions, " questions, relative clauses: ", subject_gaps, " subject gaps, ", object_gaps, " object gaps");
  CHECK(questions > 500);
  CHECK(subject_gaps > 500);
  CHECK(object_gaps > 500);
}
