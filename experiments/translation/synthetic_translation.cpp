// The synthetic German-like → English-like task: the lexicon as small tables,
// a random sentence structure grown to a drawn length, and one writer per
// language. The grammar is documented in synthetic_translation.h.
#include "rmsgrad/experiments/translation/synthetic_translation.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/random.h"

namespace rg {
namespace {

// ---- The lexicon ----------------------------------------------------------

const SyntheticNoun kNouns[] = {
    {"hund", "hunde", 'm', "dog", "dogs"},           {"mann", "maenner", 'm', "man", "men"},
    {"vogel", "voegel", 'm', "bird", "birds"},       {"lehrer", "lehrer", 'm', "teacher", "teachers"},
    {"fisch", "fische", 'm', "fish", "fish"},        {"apfel", "aepfel", 'm', "apple", "apples"},
    {"brief", "briefe", 'm', "letter", "letters"},   {"wagen", "wagen", 'm', "car", "cars"},
    {"koenig", "koenige", 'm', "king", "kings"},     {"garten", "gaerten", 'm', "garden", "gardens"},
    {"katze", "katzen", 'f', "cat", "cats"},         {"frau", "frauen", 'f', "woman", "women"},
    {"maus", "maeuse", 'f', "mouse", "mice"},        {"tuer", "tueren", 'f', "door", "doors"},
    {"lampe", "lampen", 'f', "lamp", "lamps"},       {"blume", "blumen", 'f', "flower", "flowers"},
    {"schwester", "schwestern", 'f', "sister", "sisters"},
    {"stadt", "staedte", 'f', "city", "cities"},     {"kuh", "kuehe", 'f', "cow", "cows"},
    {"kind", "kinder", 'n', "child", "children"},    {"haus", "haeuser", 'n', "house", "houses"},
    {"buch", "buecher", 'n', "book", "books"},       {"pferd", "pferde", 'n', "horse", "horses"},
    {"schaf", "schafe", 'n', "sheep", "sheep"},      {"maedchen", "maedchen", 'n', "girl", "girls"},
    {"fenster", "fenster", 'n', "window", "windows"}, {"messer", "messer", 'n', "knife", "knives"},
    {"ei", "eier", 'n', "egg", "eggs"},
};

const SyntheticVerb kVerbs[] = {
    {"sieht", "sehen", "sees", "see", true},          {"findet", "finden", "finds", "find", true},
    {"kennt", "kennen", "knows", "know", true},       {"sucht", "suchen", "seeks", "seek", true},
    {"liebt", "lieben", "loves", "love", true},       {"braucht", "brauchen", "needs", "need", true},
    {"kauft", "kaufen", "buys", "buy", true},         {"baut", "bauen", "builds", "build", true},
    {"holt", "holen", "fetches", "fetch", true},      {"traegt", "tragen", "carries", "carry", true},
    {"zeigt", "zeigen", "shows", "show", true},       {"fragt", "fragen", "asks", "ask", true},
    {"ruft", "rufen", "calls", "call", true},         {"besucht", "besuchen", "visits", "visit", true},
    {"isst", "essen", "eats", "eat", true},           {"liest", "lesen", "reads", "read", true},
    {"schlaeft", "schlafen", "sleeps", "sleep", false}, {"laeuft", "laufen", "runs", "run", false},
    {"lacht", "lachen", "laughs", "laugh", false},    {"singt", "singen", "sings", "sing", false},
    {"wartet", "warten", "waits", "wait", false},     {"spielt", "spielen", "plays", "play", false},
    {"tanzt", "tanzen", "dances", "dance", false},    {"schwimmt", "schwimmen", "swims", "swim", false},
};

const SyntheticWord kAdjectives[] = {
    {"gross", "big"},  {"klein", "small"}, {"alt", "old"},         {"jung", "young"},
    {"rot", "red"},    {"blau", "blue"},   {"gruen", "green"},     {"schnell", "fast"},
    {"langsam", "slow"}, {"schoen", "beautiful"}, {"hungrig", "hungry"}, {"klug", "clever"},
};

const SyntheticWord kPrepositions[] = {
    {"mit", "with"}, {"in", "in"},         {"auf", "on"}, {"unter", "under"},
    {"neben", "beside"}, {"hinter", "behind"}, {"bei", "near"},
};

const SyntheticWord kConjunctions[] = {
    {"und", "and"}, {"aber", "but"}, {"weil", "because"}, {"waehrend", "while"}, {"wenn", "when"},
};

enum Case { kNominative, kAccusative, kDative };

// kArticles[definite][case][slot], slot = 0 m, 1 f, 2 n, 3 plural.
const char* const kArticles[2][3][4] = {
    {{"ein", "eine", "ein", "einige"}, {"einen", "eine", "ein", "einige"}, {"einem", "einer", "einem", "einigen"}},
    {{"der", "die", "das", "die"}, {"den", "die", "das", "die"}, {"dem", "der", "dem", "den"}},
};
const char* const kAdjectiveEndings[4] = {"er", "e", "es", "en"};
// An object-gap relative pronoun (accusative of "welcher"); a subject gap uses
// the nominative definite article. Two sets, so "die katze, die die maus
// sieht" can only mean the cat that sees the mouse.
const char* const kObjectRelative[4] = {"welchen", "welche", "welches", "welche"};

template <class T, size_t N>
constexpr int count_of(const T (&)[N]) { return static_cast<int>(N); }

// ---- The sentence structure ------------------------------------------------

struct Phrase {  // Det Noun Adj*
  int noun = 0;
  bool plural = false, definite = true;
  std::vector<int> adjectives;
  int slot() const { return plural ? 3 : kNouns[noun].gender == 'm' ? 0 : kNouns[noun].gender == 'f' ? 1 : 2; }
};

struct Clause {
  Phrase subject;
  bool has_relative = false, subject_gap = true;  // a relative clause on the subject
  Phrase other;                                   // the relative clause's other noun phrase
  int relative_verb = 0;
  bool has_object = false;
  Phrase object;
  int preposition = -1;  // -1: no prepositional phrase
  Phrase place;
  int verb = 0;
};

struct Sentence {
  std::vector<Clause> clauses;
  std::vector<int> conjunctions;  // between clauses i and i+1
  bool question = false;
};

constexpr int kMaxClauses = 4, kMaxAdjectives = 2;

int words(const Phrase& p) { return 2 + static_cast<int>(p.adjectives.size()); }
int words(const Clause& c) {
  int n = words(c.subject) + 1;
  if (c.has_relative) n += 2 + words(c.other);
  if (c.has_object) n += words(c.object);
  if (c.preposition >= 0) n += 1 + words(c.place);
  return n;
}
int words(const Sentence& s) {
  int n = static_cast<int>(s.conjunctions.size());
  for (const Clause& c : s.clauses) n += words(c);
  return n;
}

Phrase random_phrase(Generator& gen) {
  Phrase p;
  p.noun = static_cast<int>(gen.randint(count_of(kNouns)));
  p.plural = gen.randint(3) == 0;
  p.definite = gen.randint(3) != 0;
  return p;
}

Clause random_clause(Generator& gen) {  // "Det Noun Verb"; the verb comes last
  Clause c;
  c.subject = random_phrase(gen);
  return c;
}

int random_verb(Generator& gen, bool transitive) {
  for (;;) {  // 16 of the 24 verbs are transitive, so this ends quickly
    int v = static_cast<int>(gen.randint(count_of(kVerbs)));
    if (kVerbs[v].transitive == transitive) return v;
  }
}

// Grows the smallest sentence "Det Noun Verb" by random steps until no step
// fits in `length` words. A step kind is drawn first (so the many noun phrases
// do not make adjectives crowd out the rest), then where to apply it.
Sentence random_sentence(Generator& gen, int length) {
  Sentence s;
  s.clauses.push_back(random_clause(gen));
  for (;;) {
    const int room = length - words(s);
    std::vector<Phrase*> adjective_room;
    std::vector<Clause*> no_object, no_place, no_relative;
    for (Clause& c : s.clauses) {
      for (Phrase* p : {&c.subject, &c.other, &c.object, &c.place}) {
        bool used = p == &c.subject || (p == &c.other && c.has_relative) || (p == &c.object && c.has_object) ||
                    (p == &c.place && c.preposition >= 0);
        if (used && static_cast<int>(p->adjectives.size()) < kMaxAdjectives) adjective_room.push_back(p);
      }
      if (!c.has_object) no_object.push_back(&c);
      if (c.preposition < 0) no_place.push_back(&c);
      if (!c.has_relative) no_relative.push_back(&c);
    }
    enum Step { kAdjective, kObject, kPlace, kRelative, kClause };
    std::vector<Step> steps;
    if (room >= 1 && !adjective_room.empty()) steps.push_back(kAdjective);
    if (room >= 2 && !no_object.empty()) steps.push_back(kObject);
    if (room >= 3 && !no_place.empty()) steps.push_back(kPlace);
    if (room >= 4 && !no_relative.empty()) steps.push_back(kRelative);
    if (room >= 4 && static_cast<int>(s.clauses.size()) < kMaxClauses) steps.push_back(kClause);
    if (steps.empty()) break;
    auto pick = [&](auto& list) { return list[gen.randint(static_cast<int64_t>(list.size()))]; };
    switch (pick(steps)) {
      case kAdjective: {
        std::vector<int>& adjectives = pick(adjective_room)->adjectives;
        int a = static_cast<int>(gen.randint(count_of(kAdjectives)));
        while (std::find(adjectives.begin(), adjectives.end(), a) != adjectives.end())  // no "rote rote"
          a = static_cast<int>(gen.randint(count_of(kAdjectives)));
        adjectives.push_back(a);
        break;
      }
      case kObject: {
        Clause* c = pick(no_object);
        c->has_object = true, c->object = random_phrase(gen);
        break;
      }
      case kPlace: {
        Clause* c = pick(no_place);
        c->preposition = static_cast<int>(gen.randint(count_of(kPrepositions))), c->place = random_phrase(gen);
        break;
      }
      case kRelative: {
        Clause* c = pick(no_relative);
        c->has_relative = true, c->subject_gap = gen.randint(2) == 0, c->other = random_phrase(gen);
        break;
      }
      case kClause:
        s.conjunctions.push_back(static_cast<int>(gen.randint(count_of(kConjunctions))));
        s.clauses.push_back(random_clause(gen));
        break;
    }
  }
  // Verbs last: whether a clause is transitive is only known now.
  for (Clause& c : s.clauses) {
    c.verb = random_verb(gen, c.has_object);
    if (c.has_relative) c.relative_verb = random_verb(gen, true);
  }
  s.question = s.clauses.size() == 1 && gen.randint(4) == 0;
  return s;
}

// ---- Writing the two languages --------------------------------------------

using Words = std::vector<std::string>;

const char* verb_form(int verb, bool plural, bool source) {
  const SyntheticVerb& v = kVerbs[verb];
  return source ? (plural ? v.source_plural : v.source_singular) : (plural ? v.target_plural : v.target_singular);
}

// Det Noun Adj*, every word agreeing with the noun's gender and number.
void source_phrase(const Phrase& p, Case c, Words& out) {
  const SyntheticNoun& n = kNouns[p.noun];
  out.push_back(kArticles[p.definite][c][p.slot()]);
  out.push_back(p.plural ? n.source_plural : n.source_singular);
  for (int a : p.adjectives) out.push_back(std::string(kAdjectives[a].source) + kAdjectiveEndings[p.slot()]);
}

// Det Adj* Noun, with a/an chosen by the next word's first letter.
void target_phrase(const Phrase& p, Words& out) {
  const SyntheticNoun& n = kNouns[p.noun];
  Words rest;
  for (int a : p.adjectives) rest.push_back(kAdjectives[a].target);
  rest.push_back(p.plural ? n.target_plural : n.target_singular);
  if (p.definite) out.push_back("the");
  else if (p.plural) out.push_back("some");
  else out.push_back(std::string("aeiou").find(rest[0][0]) != std::string::npos ? "an" : "a");
  out.insert(out.end(), rest.begin(), rest.end());
}

// Subject [, RelPron Other Verb,] [Object] [Prep Place] Verb — or with the
// main verb first in a question.
void source_clause(const Clause& c, bool question, Words& out) {
  const char* verb = verb_form(c.verb, c.subject.plural, true);
  if (question) out.push_back(verb);
  source_phrase(c.subject, kNominative, out);
  if (c.has_relative) {
    out.back() += ",";
    out.push_back(c.subject_gap ? kArticles[1][kNominative][c.subject.slot()] : kObjectRelative[c.subject.slot()]);
    source_phrase(c.other, c.subject_gap ? kAccusative : kNominative, out);
    out.push_back(verb_form(c.relative_verb, c.subject_gap ? c.subject.plural : c.other.plural, true));
    out.back() += ",";
  }
  if (c.has_object) source_phrase(c.object, kAccusative, out);
  if (c.preposition >= 0) {
    out.push_back(kPrepositions[c.preposition].source);
    source_phrase(c.place, kDative, out);
  }
  if (!question) out.push_back(verb);
}

// [Does|Do] Subject [that ...] Verb [Object] [Prep Place]
void target_clause(const Clause& c, bool question, Words& out) {
  if (question) out.push_back(c.subject.plural ? "do" : "does");
  target_phrase(c.subject, out);
  if (c.has_relative) {
    out.push_back("that");
    const char* verb = verb_form(c.relative_verb, c.subject_gap ? c.subject.plural : c.other.plural, false);
    if (c.subject_gap) out.push_back(verb);
    target_phrase(c.other, out);
    if (!c.subject_gap) out.push_back(verb);
  }
  out.push_back(verb_form(c.verb, question || c.subject.plural, false));  // a question takes the base form
  if (c.has_object) target_phrase(c.object, out);
  if (c.preposition >= 0) {
    out.push_back(kPrepositions[c.preposition].target);
    target_phrase(c.place, out);
  }
}

// Clauses joined by conjunctions; `comma_before` says which take a comma.
template <class WriteClause, class CommaBefore>
std::string write_sentence(const Sentence& s, bool source, WriteClause write_clause, CommaBefore comma_before) {
  Words out;
  for (size_t i = 0; i < s.clauses.size(); ++i) {
    if (i > 0) {
      const SyntheticWord& conj = kConjunctions[s.conjunctions[i - 1]];
      if (comma_before(s.conjunctions[i - 1])) out.back() += ",";
      out.push_back(source ? conj.source : conj.target);
    }
    write_clause(s.clauses[i], s.question, out);
  }
  // A relative clause's closing comma at the end of a question gives way to "?".
  if (out.back().back() == ',') out.back().pop_back();
  out.back() += s.question ? "?" : ".";
  out[0][0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0][0])));
  std::string text = out[0];
  for (size_t i = 1; i < out.size(); ++i) text += " " + out[i];
  return text;
}

}  // namespace

const SyntheticLexicon& synthetic_lexicon() {
  static const SyntheticLexicon lexicon{kNouns, kVerbs, kAdjectives, kPrepositions, kConjunctions};
  return lexicon;
}

ParallelText synthetic_translation(const SyntheticTranslationOptions& options) {
  check(options.pairs > 0, "synthetic_translation: pairs must be positive, got {}", options.pairs);
  check(options.min_words >= 3, "synthetic_translation: min_words must be at least 3 (the shortest sentence), got {}",
        options.min_words);
  check(options.min_words <= options.max_words, "synthetic_translation: min_words {} is greater than max_words {}",
        options.min_words, options.max_words);
  check(options.max_words <= 80, "synthetic_translation: max_words must be at most 80 (the longest sentence), got {}",
        options.max_words);
  Generator gen(options.seed);
  ParallelText text;
  text.source.reserve(options.pairs);
  text.target.reserve(options.pairs);
  const int span = options.max_words - options.min_words + 1;
  for (int64_t i = 0; i < options.pairs; ++i) {
    // Growth can stop short (every noun phrase full of adjectives, one word of
    // room left); such a sentence is drawn again, so every length is exact.
    const int length = options.min_words + static_cast<int>(gen.randint(span));
    Sentence s = random_sentence(gen, length);
    while (words(s) != length) s = random_sentence(gen, length);
    // A comma before every conjunction but "und" (0), in English before "but" (1) only.
    text.source.push_back(write_sentence(s, true, source_clause, [](int conj) { return conj != 0; }));
    text.target.push_back(write_sentence(s, false, target_clause, [](int conj) { return conj == 1; }));
  }
  return text;
}

}  // namespace rg
