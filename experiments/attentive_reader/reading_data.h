#pragma once
// Data for cloze-style reading comprehension (the attentive reader, Hermann
// et al. 2015): one question is a document, a query with a slot, an answer
// and the candidate answers, all as whitespace tokens. Readers for four
// sources, the paper's "top4" passage filter, entity anonymisation, the
// synthetic default task and the validation hold-out. The readers are in
// reading_data.cpp, the rest in question_builders.cpp.
//
// Sources (every reader throws rg::Error naming the file and line on
// malformed input: a missing section, an answer that is not a candidate, a
// line out of order, an unreadable or empty file):
//
//   DeepMind CNN / Daily Mail .question files (one question per file):
//       URL                     line 1
//       <blank>
//       context                 one line, tokenised, entities as @entityN
//       <blank>
//       query                   one line, with @placeholder
//       <blank>
//       answer                  @entityN
//       <blank>
//       @entityN:surface name   one line per entity of the document
//     Candidates are the entities of the mapping lines. top_sentences > 0
//     keeps that many context sentences (the paper's top4: 4), those sharing
//     the most distinct words with the query (tokens with a letter or digit:
//     punctuation does not count; ties to the earlier sentence), in document
//     order; sentences end at the tokens "." "!" "?".
//
//   bAbI (Weston et al. 2015) task files: numbered lines; a line numbered 1
//     starts a story; a question line is "N question?<TAB>answer<TAB>facts".
//     The document is the story's statements up to the question; the query
//     is the question; words are cut from punctuation ("bathroom." →
//     "bathroom" "."), case kept. Candidates: the answers of the file's
//     questions that occur in the document, or all of the file's answers
//     when the answer does not occur in it (yes/no, counting tasks).
//     Line numbers count up by one within a story. `group` is the story
//     index.
//
//   Children's Book Test question files: 21 numbered lines, 20 of context
//     and "21 query<TAB>answer<TAB><TAB>cand1|cand2|…", blank lines between
//     questions; the query's XXXXX becomes @placeholder; a candidate listed
//     twice is kept once. `group` is the question's index.
//
//   Cloze questions built from CBT book text (cbt_{train,valid,test}.txt:
//     one sentence per line, "_BOOK_TITLE_ : …" lines start books): windows
//     of 21 consecutive sentences of one book, stride 21. A "name" is a
//     capitalised word (an upper-case letter, then letters only, at least
//     one lower-case: not "I", not "CHAPTER") that does not open a sentence
//     (some word comes between it and the line's start, "." "!" "?" ":" or
//     an opening quote `` or `). The answer is a name of the 21st sentence
//     that occurs in the 20 context sentences — the seeded generator picks
//     one when there are several — and it is replaced by @placeholder
//     wherever it occurs in the query; candidates are the answer and up to 9
//     other distinct names of the context, drawn by the same generator, in
//     alphabetical order (a window with fewer than 2 candidates gives no
//     question). CBT's "named entity" questions, with capitalisation
//     standing in for a tagger. `group` is the question's index.
//
// Anonymisation (Hermann et al.): every candidate is replaced, wherever it
// occurs in document, query and answer, by @entityK, K numbered in order of
// first occurrence in the document (candidates absent from the document
// after those); the candidates become @entity0, @entity1, …. Tokens that
// already look like @entityN but are not candidates get ids after the
// candidates', so nothing collides. The ids are shuffled again per minibatch
// by the batcher, so a model cannot learn an answer prior for an id.
//
// The synthetic task (default data): anonymised questions that need
// attention. A document lists 2–4 facts "@entityA <verb> the <noun> .", no
// two sharing an entity, a verb or a noun, drawn from 10 verbs, 10 nouns and
// entity ids @entity0…@entity9, in random order; the query is one of the
// facts with its entity replaced by @placeholder; the answer is that entity;
// the candidates are the document's entities. Only matching the query's verb
// or noun against the document answers it; the ids carry no prior, being
// drawn at random for every question.
// Deterministic in (count, seed).
#include <cstdint>
#include <string>
#include <vector>

namespace rg::reader {

inline constexpr const char* kPlaceholder = "@placeholder";

struct Question {
  std::vector<std::string> document;    // passage tokens
  std::vector<std::string> query;       // query tokens
  std::string answer;                   // one of candidates
  std::vector<std::string> candidates;  // distinct; contains answer
  int64_t group = 0;                    // questions that share a passage source (bAbI story, file index)
  std::string origin;                   // "file:line" of the question, for messages
};

// DeepMind .question files.
Question read_deepmind_question(const std::string& path, int top_sentences = 0);
// Every *.question file under `dir` (sorted by name, group = position), at
// most `limit` of them (0: all).
std::vector<Question> read_deepmind_dir(const std::string& dir, int top_sentences = 0, int64_t limit = 0);

// Keeps the `count` sentences of `document` sharing the most distinct words
// with `query`, in document order (the DeepMind "top4" option).
std::vector<std::string> top_sentences(const std::vector<std::string>& document,
                                       const std::vector<std::string>& query, int count);

std::vector<Question> read_babi(const std::string& path);
std::vector<Question> read_cbt_questions(const std::string& path);

struct ClozeOptions {
  int context_sentences = 20;
  int max_candidates = 10;
  int64_t limit = 0;  // at most this many questions (0: all)
  uint64_t seed = 1;
};
std::vector<Question> build_cbt_cloze(const std::string& book_path, const ClozeOptions& options = {});

// Candidates → @entityK (see above). Returns the anonymised copy.
Question anonymize(const Question& q);
// The largest K of an "@entityK" token in any question, plus one (0: none).
int64_t entity_count(const std::vector<Question>& questions);

std::vector<Question> synthetic_questions(int64_t count, uint64_t seed);

// The validation hold-out: questions whose group % 10 == 9 (10% of stories
// or files, never splitting a story's questions between the two).
struct Split {
  std::vector<Question> train, valid;
};
Split hold_out_tenth(std::vector<Question> questions);

}  // namespace rg::reader
