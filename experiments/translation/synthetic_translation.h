#pragma once
// A synthetic translation task, so the RNNSearch driver runs without data: a
// German-like source language and an English-like target, generated together
// from one random sentence structure, so every pair is an exact translation.
//
// Why a fixed-length encoder (RNNencdec) struggles here and attention helps:
// the source is verb-final and the target is SVO, so the target's verb, which
// comes second, is the source clause's last word — possibly 15 words later —
// and its ending (sees / see) is decided by the subject, at the start of the
// clause. Adjectives follow the noun in the source and precede it in the
// target, and a noun's English plural can depend on the source determiner.
//
// The grammar (a sentence is built first, then written in both languages):
//
//   Sentence  = Clause (Conj Clause)*          at most 4 clauses
//             | Clause "?"                     a question: one clause only
//   Clause    = Subject [Relative] [Object] [Prep Place] Verb
//   NP        = Det Noun Adj{0,2}              Subject, Object, Place, Other;
//                                              two adjectives differ
//   Relative  = RelPron Other Verb             subject gap: "der die katze sieht"
//                                              object gap:  "welchen die katze sieht"
//
// Source (German-like), written as in the grammar above:
//   Noun   a lemma of gender m/f/n with a singular and a plural form; the plural
//          of some m/n nouns equals the singular ("der lehrer" / "die lehrer"),
//          so then only the determiner (or adjective ending) shows the number.
//   Det    agrees with the noun in gender, number and case, German style:
//                       m      f      n      plural
//            nom def    der    die    das    die      indef  ein    eine  ein    einige
//            acc def    den    die    das    die      indef  einen  eine  ein    einige
//            dat def    dem    der    dem    den      indef  einem  einer einem  einigen
//          Subject and Other in a subject-gap relative: nominative; Object and
//          Other in an object-gap relative: accusative; Place: dative.
//   Adj    stem + ending by the noun: m "-er", f "-e", n "-es", plural "-en".
//   RelPron  agrees with the antecedent's gender and number: for a subject gap
//          the nominative definite determiner (der, die, das, die), for an
//          object gap the accusative of "welcher" (welchen, welche, welches,
//          welche) — two sets, so "die katze, die die maus sieht" has one
//          reading. The relative clause is set off by commas.
//   Verb   at the end of its clause; singular or plural form by its subject
//          (a relative clause's subject is the antecedent for a subject gap,
//          Other for an object gap). A question moves the main verb first.
//   Conj   "und" joins clauses plainly; "aber", "weil", "waehrend", "wenn"
//          take a comma before them.
//
// Target (English-like), the same structure in English order:
//   Clause     = Subject [Relative] Verb [Object] [Prep Place]
//   Question   = Does|Do Subject [Relative] Verb-base [Object] [Prep Place] "?"
//   Relative   = "that" Verb Other (subject gap) | "that" Other Verb (object gap)
//   NP         = Det Adj{0,2} Noun, the adjectives in the source's order;
//                Det "the", or "a"/"an" (an before a vowel) for an indefinite
//                singular, "some" for an indefinite plural
//   Verb       third person singular ("sees") for a singular subject, else the
//              base form ("see"); Does for a singular subject, Do otherwise
//   Conj       "and", "but" (after a comma), "because", "while", "when"
//
// Both sides: words are lowercase ASCII (umlauts written ae/oe/ue), the first
// word is capitalised and the final "." or "?" is attached to the last word,
// like real text. A "word" is a whitespace-separated token; only the source
// length is bounded by the options (the target has the same number of words,
// one more for a question's Does/Do).
//
// Lengths: each sentence draws a length L uniformly from [min_words,
// max_words], starts from the smallest clause ("Der hund schlaeft.") and grows
// by random steps — an adjective, an object, a prepositional phrase, a
// relative clause, another clause — that fit in L, so lengths spread over the
// whole range. Deterministic for a seed on every platform (rg::Generator).
#include <cstdint>
#include <span>

#include "rmsgrad/experiments/translation/translation_data.h"  // ParallelText

namespace rg {

struct SyntheticTranslationOptions {
  int64_t pairs = 20000;
  uint64_t seed = 1;
  int min_words = 3, max_words = 25;  // source sentence length bounds, in words incl. punctuation
};

// `pairs` sentence pairs; throws rg::Error for pairs <= 0, min_words < 3,
// min_words > max_words or max_words > 80 (about the longest the grammar makes).
ParallelText synthetic_translation(const SyntheticTranslationOptions& options);

// The lexicon, for tests and curious readers.
struct SyntheticNoun {
  const char* source_singular;
  const char* source_plural;
  char gender;  // 'm', 'f' or 'n'
  const char* target_singular;
  const char* target_plural;
};
struct SyntheticVerb {
  const char* source_singular;  // third person: "sieht"
  const char* source_plural;    // "sehen"
  const char* target_singular;  // "sees"
  const char* target_plural;    // "see", also the base form after Does/Do
  bool transitive;
};
struct SyntheticWord {
  const char* source;  // an adjective's stem, a preposition, a conjunction
  const char* target;
};
struct SyntheticLexicon {
  std::span<const SyntheticNoun> nouns;
  std::span<const SyntheticVerb> verbs;
  std::span<const SyntheticWord> adjectives, prepositions, conjunctions;
};
const SyntheticLexicon& synthetic_lexicon();

}  // namespace rg
