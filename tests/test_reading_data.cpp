// Data for the attentive reader: each reader (DeepMind .question, bAbI, CBT
// questions, cloze questions from CBT book text) on small files written here,
// with exact tokens, answers and candidates, and every malformed input giving
// an error that names the file and line; the top4 filter on a worked example;
// anonymisation; the synthetic task; the hold-out; and the real bAbI and CBT
// files in ../shared/data when present.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "experiments/attentive_reader/reading_data.h"
#include "test_util.h"

using namespace rg;
using namespace rg::reader;
namespace fs = std::filesystem;

namespace {

using test::error_of;
using test::TempDir;
using Tokens = std::vector<std::string>;

std::string write_text(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

Tokens words(const std::string& text) {
  std::istringstream in(text);
  Tokens tokens;
  for (std::string w; in >> w;) tokens.push_back(w);
  return tokens;
}

// The error thrown by f names `where` ("path:line:") and says `what`.
void check_error(const std::function<void()>& f, const std::string& where, const std::string& what) {
  const std::string message = error_of(f);
  CAPTURE(message);
  CHECK(message.find(where) != std::string::npos);
  CHECK(message.find(what) != std::string::npos);
}

const char* kDeepMind =
    "http://example.com/story\n"
    "\n"
    "@entity0 visited @entity1 . the weather was fine . @entity2 met @entity0 in @entity1 .\n"
    "\n"
    "@placeholder met @entity0 in @entity1\n"
    "\n"
    "@entity2\n"
    "\n"
    "@entity0:Ann Lee\n"
    "@entity1:Paris: the city\n"
    "@entity2:Bob\n";

}  // namespace

TEST_CASE("a DeepMind .question file: sections, candidates from the entity lines, top sentences") {
  TempDir tmp("reading_deepmind");
  const std::string path = write_text(tmp, "story.question", kDeepMind);
  Question q = read_deepmind_question(path);
  CHECK(q.document == words("@entity0 visited @entity1 . the weather was fine . @entity2 met @entity0 in @entity1 ."));
  CHECK(q.query == words("@placeholder met @entity0 in @entity1"));
  CHECK(q.answer == "@entity2");
  CHECK(q.candidates == Tokens{"@entity0", "@entity1", "@entity2"});
  CHECK(q.origin == path + ":5");
  // Sentence 3 shares met, @entity0, in, @entity1 with the query; sentence 1 two words; sentence 2 none.
  CHECK(read_deepmind_question(path, 1).document == words("@entity2 met @entity0 in @entity1 ."));
  CHECK(read_deepmind_question(path, 2).document ==
        words("@entity0 visited @entity1 . @entity2 met @entity0 in @entity1 ."));
  CHECK(read_deepmind_question(path, 3).document == q.document);
}

TEST_CASE("malformed DeepMind .question files: the error names the file and the line") {
  TempDir tmp("reading_deepmind_bad");
  auto bad = [&](const std::string& name, const std::string& text, int line, const std::string& what) {
    CAPTURE(name);
    const std::string path = write_text(tmp, name, text);
    check_error([&] { read_deepmind_question(path); }, path + ":" + std::to_string(line) + ":", what);
  };
  bad("ends.question", "http://x\n\n@entity0 ran .\n", 5, "missing the query");
  bad("no_entities.question", "http://x\n\n@entity0 ran .\n\n@placeholder ran\n\n@entity0\n\n", 9,
      "missing the entity lines");
  bad("blank_context.question", "http://x\n\n\n\n@placeholder ran\n\n@entity0\n\n@entity0:A\n", 3,
      "missing the context");
  bad("no_gap.question", "http://x\n\n@entity0 ran .\nmore context\n@placeholder ran\n", 4, "expected a blank line");
  bad("no_slot.question", "http://x\n\n@entity0 ran .\n\n@entity0 ran\n\n@entity0\n\n@entity0:A\n", 5,
      "no @placeholder");
  bad("answer.question", "http://x\n\n@entity0 ran .\n\n@placeholder ran\n\n@entity9\n\n@entity0:A\n@entity1:B\n", 7,
      "not among the entity lines");
  bad("colon.question", "http://x\n\n@entity0 ran .\n\n@placeholder ran\n\n@entity0\n\n@entity0:A\n@entity1 B\n", 10,
      "malformed entity line");
  bad("id.question", "http://x\n\n@entity0 ran .\n\n@placeholder ran\n\n@entity0\n\n@entityX:A\n", 9,
      "malformed entity line");
  bad("twice.question", "http://x\n\n@entity0 ran .\n\n@placeholder ran\n\n@entity0\n\n@entity0:A\n@entity0:B\n", 10,
      "listed twice");
  bad("empty.question", "\n\n", 1, "empty");
  const std::string missing = tmp.file("missing.question");
  check_error([&] { read_deepmind_question(missing); }, missing, "no such file");
}

TEST_CASE("a directory of .question files: sorted by name, group = position, limit") {
  TempDir tmp("reading_deepmind_dir");
  for (const char* name : {"b.question", "c.question", "a.question"}) write_text(tmp, name, kDeepMind);
  write_text(tmp, "notes.txt", "not a question\n");
  std::vector<Question> all = read_deepmind_dir(tmp.path.string());
  REQUIRE(all.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(all[i].origin == tmp.file(std::string(1, static_cast<char>('a' + i)) + ".question") + ":5");
    CHECK(all[i].group == static_cast<int64_t>(i));
  }
  CHECK(read_deepmind_dir(tmp.path.string(), 1, 2).size() == 2);
  CHECK(read_deepmind_dir(tmp.path.string(), 1, 2)[1].document == words("@entity2 met @entity0 in @entity1 ."));
  check_error([&] { read_deepmind_dir(tmp.file("nowhere")); }, "nowhere", "no such directory");
  fs::create_directories(tmp.path / "empty");
  check_error([&] { read_deepmind_dir(tmp.file("empty")); }, "empty", "no *.question files");
}

TEST_CASE("top_sentences keeps the sentences sharing most distinct query words, ties to the earlier, in order") {
  // S0 shares cat; S1 dog; S2 cat (once, however often it repeats); S3 cat
  // and dog; S4 nothing. The query's "." is punctuation, not a word: were it
  // counted, S0 and S2 would beat S1.
  const Tokens document = words("the cat sat . a dog ran ! cat cat cat cat . the cat and dog played ? birds sing");
  const Tokens query = words("@placeholder cat dog .");
  CHECK(top_sentences(document, query, 1) == words("the cat and dog played ?"));
  CHECK(top_sentences(document, query, 2) == words("the cat sat . the cat and dog played ?"));
  CHECK(top_sentences(document, query, 3) == words("the cat sat . a dog ran ! the cat and dog played ?"));
  CHECK(top_sentences(document, query, 4) == words("the cat sat . a dog ran ! cat cat cat cat . the cat and dog "
                                                   "played ?"));
  CHECK(top_sentences(document, query, 5) == document);
  CHECK(top_sentences(document, query, 9) == document);
  CHECK(error_of([&] { top_sentences(document, query, 0); }).find("count must be positive") != std::string::npos);
}

TEST_CASE("a bAbI file: stories, words cut from punctuation, candidates from the file's answers") {
  TempDir tmp("reading_babi");
  const std::string path = write_text(tmp, "qa.txt",
                                      "1 Mary moved to the bathroom.\n"
                                      "2 John went to the hallway.\n"
                                      "3 Where is Mary? \tbathroom\t1\n"
                                      "4 Is John in the hallway? \tyes\t2\n"
                                      "5 Where is John?\thallway\t2\n"
                                      "1 Sandra went to the garden.\n"
                                      "2 Where is Sandra?\tgarden\t1\n");
  std::vector<Question> qs = read_babi(path);
  REQUIRE(qs.size() == 4);
  const Tokens story = words("Mary moved to the bathroom . John went to the hallway .");
  CHECK(qs[0].document == story);
  CHECK(qs[0].query == words("Where is Mary ?"));
  CHECK(qs[0].answer == "bathroom");
  CHECK(qs[0].candidates == Tokens{"bathroom", "hallway"});  // the file's answers found in the story
  CHECK(qs[1].document == story);
  CHECK(qs[1].query == words("Is John in the hallway ?"));
  CHECK(qs[1].answer == "yes");
  CHECK(qs[1].candidates == Tokens{"bathroom", "yes", "hallway", "garden"});  // "yes" is not in it: all answers
  CHECK(qs[2].candidates == Tokens{"bathroom", "hallway"});
  CHECK(qs[3].document == words("Sandra went to the garden ."));
  CHECK(qs[3].candidates == Tokens{"garden"});
  CHECK(qs[0].group == 0);
  CHECK(qs[2].group == 0);
  CHECK(qs[3].group == 1);
  CHECK(qs[0].origin == path + ":3");
  CHECK(qs[3].origin == path + ":7");
}

TEST_CASE("malformed bAbI files: the error names the file and the line") {
  TempDir tmp("reading_babi_bad");
  auto bad = [&](const std::string& name, const std::string& text, int line, const std::string& what) {
    CAPTURE(name);
    const std::string path = write_text(tmp, name, text);
    check_error([&] { read_babi(path); }, path + ":" + std::to_string(line) + ":", what);
  };
  bad("gap.txt", "1 Mary ran.\n2 Bob ran.\n4 Where is Bob?\tgarden\t2\n", 3, "line number 4 after 2");
  bad("back.txt", "1 Mary ran.\n2 Bob ran.\n2 Where is Bob?\tgarden\t2\n", 3, "line number 2 after 2");
  bad("first.txt", "2 Mary ran.\n", 1, "not 1");
  bad("word.txt", "1 Mary ran.\nMary ran.\n", 2, "does not start with a line number");
  bad("no_tab.txt", "1 Mary ran.\n2 Where is Mary?\n", 2, "without a tab-separated answer");
  bad("no_answer.txt", "1 Mary ran.\n2 Where is Mary?\t\t1\n", 2, "without a tab-separated answer");
  bad("empty.txt", "", 1, "empty");
  const std::string missing = tmp.file("missing.txt");
  check_error([&] { read_babi(missing); }, missing, "no such file");
}

namespace {

// A CBT question file of `count` questions; question k's context line i is
// "i word<i> Name<k> ." and its query "who met XXXXX ?" with answer Ann.
std::string cbt_questions(int count, const std::string& candidates = "Ann|Bob|Cid") {
  std::string text;
  for (int k = 0; k < count; ++k) {
    for (int i = 1; i <= 20; ++i) text += std::to_string(i) + " word" + std::to_string(i) + " Name .\n";
    text += "21 who met XXXXX ?\tAnn\t\t" + candidates + "\n\n";
  }
  return text;
}

}  // namespace

TEST_CASE("a CBT question file: 20 context lines, the query with its slot, the candidates") {
  TempDir tmp("reading_cbt");
  const std::string path = write_text(tmp, "cbt.txt", cbt_questions(2, "Bob|Ann|Cid|Bob"));
  std::vector<Question> qs = read_cbt_questions(path);
  REQUIRE(qs.size() == 2);
  CHECK(qs[0].document.size() == 60);
  CHECK(Tokens(qs[0].document.begin(), qs[0].document.begin() + 6) == words("word1 Name . word2 Name ."));
  CHECK(Tokens(qs[0].document.end() - 3, qs[0].document.end()) == words("word20 Name ."));
  CHECK(qs[0].query == words("who met @placeholder ?"));
  CHECK(qs[0].answer == "Ann");
  CHECK(qs[0].candidates == Tokens{"Bob", "Ann", "Cid"});  // the repeated Bob kept once
  CHECK(qs[0].origin == path + ":21");
  CHECK(qs[1].origin == path + ":43");
  CHECK(qs[0].group == 0);
  CHECK(qs[1].group == 1);
}

TEST_CASE("malformed CBT question files: the error names the file and the line") {
  TempDir tmp("reading_cbt_bad");
  auto bad = [&](const std::string& name, const std::string& text, int line, const std::string& what) {
    CAPTURE(name);
    const std::string path = write_text(tmp, name, text);
    check_error([&] { read_cbt_questions(path); }, path + ":" + std::to_string(line) + ":", what);
  };
  std::string skipped = cbt_questions(1);
  skipped.replace(skipped.find("\n5 ") + 1, 1, "6");
  bad("order.txt", skipped, 5, "line numbered 6 where 5 was expected");
  std::string no_tabs = cbt_questions(2);
  no_tabs.replace(no_tabs.rfind("?\tAnn\t\t"), 7, "? Ann ");
  bad("no_tabs.txt", no_tabs, 43, "tab-separated answer and candidates");
  bad("not_candidate.txt", cbt_questions(1, "Bob|Cid"), 21, "not among the candidates");
  std::string no_slot = cbt_questions(1);
  no_slot.replace(no_slot.find("XXXXX"), 5, "Ann");
  bad("no_slot.txt", no_slot, 21, "no XXXXX");
  std::string cut = cbt_questions(1);
  cut = cut.substr(0, cut.find("\n21 ") + 1);
  bad("cut.txt", cut, 20, "ends after line 20");
  std::string gap = cbt_questions(1);
  gap.insert(gap.find("\n8 ") + 1, "\n");
  bad("gap.txt", gap, 8, "blank line after line 7");
  bad("empty.txt", "\n", 1, "empty");
}

namespace {

// 20 context sentences, then the query sentence, as book lines.
std::string book(const std::string& title, const std::vector<std::string>& context, const std::string& query) {
  std::string text = "_BOOK_TITLE_ : " + title + "\n";
  for (int i = 0; i < 20; ++i)
    text += (i < static_cast<int>(context.size()) ? context[static_cast<size_t>(i)] : "the day passed .") + "\n";
  return text + query + "\n";
}

}  // namespace

TEST_CASE("cloze questions from CBT book text: a capitalised answer from the context, at most 10 candidates") {
  TempDir tmp("reading_cloze");
  const std::vector<std::string> names = {"Ann", "Ben", "Cid", "Dan", "Eve", "Fay", "Gus", "Hal", "Ida", "Jo", "Kim"};
  const std::vector<std::string> context = {
      "Once Bob lived in Paris .", "There were Ann , Ben , Cid , Dan , Eve , Fay , Gus , Hal , Ida , Jo and Kim .",
      "`` Zed said I was CHAPTER one , '' said nobody .",  // Zed opens it; I and CHAPTER are no names
      "The end . The king said : Now go !",                // each capitalised word opens a sentence
  };
  const std::string path =
      write_text(tmp, "book.txt",
                 book("First", context, "Then Bob laughed at Max .") +       // line 22: Max is not in the context
                     book("Second", {"with Bob ."}, "Then Bob laughed .") +  // no second candidate: no question
                     "_BOOK_TITLE_ : Short\nOnce Ann saw Bob .\nThen Ann left .\n");  // too short for a window
  std::vector<Question> qs = build_cbt_cloze(path);
  REQUIRE(qs.size() == 1);
  const Question& q = qs[0];
  CHECK(q.answer == "Bob");
  CHECK(q.query == words("Then @placeholder laughed at Max ."));
  CHECK(q.origin == path + ":22");
  CHECK(q.document.size() == 6 + 24 + 12 + 10 + 16 * 4);
  CHECK(Tokens(q.document.begin(), q.document.begin() + 6) == words("Once Bob lived in Paris ."));
  CHECK(q.candidates.size() == 10);
  CHECK(std::is_sorted(q.candidates.begin(), q.candidates.end()));
  CHECK(std::set<std::string>(q.candidates.begin(), q.candidates.end()).size() == q.candidates.size());
  CHECK(std::count(q.candidates.begin(), q.candidates.end(), "Bob") == 1);
  std::set<std::string> allowed(names.begin(), names.end());
  allowed.insert({"Bob", "Paris"});
  for (const std::string& c : q.candidates) CHECK(allowed.count(c) == 1);
  ClozeOptions all;
  all.max_candidates = 100;
  const std::vector<std::string> every = build_cbt_cloze(path, all)[0].candidates;
  CHECK(std::set<std::string>(every.begin(), every.end()) == allowed);

  // The same seed gives the same candidates; another seed the same only answer.
  CHECK(build_cbt_cloze(path)[0].candidates == q.candidates);
  ClozeOptions other;
  other.seed = 2;
  CHECK(build_cbt_cloze(path, other)[0].answer == "Bob");

  // With two usable answers the seed picks; both come up, each replaced by the slot.
  const std::string two = write_text(
      tmp, "two.txt", book("Two", context, "Then Bob met Ann .") + book("Three", context, "Then Bob met Ann ."));
  std::set<std::string> answers;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    ClozeOptions options;
    options.seed = seed;
    options.max_candidates = 3;
    std::vector<Question> picked = build_cbt_cloze(two, options);
    REQUIRE(picked.size() == 2);
    for (const Question& p : picked) {
      answers.insert(p.answer);
      CHECK(p.candidates.size() == 3);
      CHECK(std::count(p.candidates.begin(), p.candidates.end(), p.answer) == 1);
      CHECK(std::count(p.query.begin(), p.query.end(), std::string(kPlaceholder)) == 1);
      CHECK(std::count(p.query.begin(), p.query.end(), p.answer) == 0);
    }
    options.limit = 1;
    CHECK(build_cbt_cloze(two, options).size() == 1);
  }
  CHECK(answers == std::set<std::string>{"Ann", "Bob"});

  const std::string none = write_text(tmp, "none.txt", book("None", {}, "Then nobody came ."));
  check_error([&] { build_cbt_cloze(none); }, none, "no cloze question");
  check_error([&] { build_cbt_cloze(tmp.file("missing.txt")); }, "missing.txt", "no such file");
}

TEST_CASE("anonymize numbers candidates by first occurrence in the document, consistently everywhere") {
  Question q;
  q.document = words("Paris is where Bob met Ann . Bob left");
  q.query = words("@placeholder met Ann");
  q.answer = "Bob";
  q.candidates = {"Ann", "Bob", "Cid", "Paris"};
  q.group = 7;
  q.origin = "here:3";
  Question a = anonymize(q);
  CHECK(a.document == words("@entity0 is where @entity1 met @entity2 . @entity1 left"));
  CHECK(a.query == words("@placeholder met @entity2"));
  CHECK(a.answer == "@entity1");
  CHECK(a.candidates == Tokens{"@entity0", "@entity1", "@entity2", "@entity3"});  // Cid, absent, comes last
  CHECK(a.group == 7);
  CHECK(a.origin == "here:3");
  CHECK(entity_count({a}) == 4);
  CHECK(entity_count({q}) == 0);
  CHECK(entity_count({}) == 0);
  Question odd;
  odd.document = words("@entity-1 @entityx @entity @entity2b entity3");
  CHECK(entity_count({odd}) == 0);

  // A DeepMind question is renumbered by first occurrence too.
  Question d;
  d.document = words("@entity5 saw @entity2 and @entity5");
  d.query = words("@placeholder saw @entity2");
  d.answer = "@entity5";
  d.candidates = {"@entity2", "@entity5", "@entity9"};
  CHECK(entity_count({d}) == 10);
  Question da = anonymize(d);
  CHECK(da.document == words("@entity0 saw @entity1 and @entity0"));
  CHECK(da.query == words("@placeholder saw @entity1"));
  CHECK(da.answer == "@entity0");
  CHECK(da.candidates == Tokens{"@entity0", "@entity1", "@entity2"});
  CHECK(entity_count({a, da}) == 4);

  // A token that looks like an entity but is no candidate cannot collide.
  d.document.push_back("@entity0");
  CHECK(anonymize(d).document == words("@entity0 saw @entity1 and @entity0 @entity3"));

  q.answer = "Zed";
  CHECK(error_of([&] { anonymize(q); }).find("not a candidate") != std::string::npos);
}

TEST_CASE("synthetic questions: deterministic in the seed, answerable only by the query's verb and noun") {
  const std::vector<Question> qs = synthetic_questions(300, 5);
  REQUIRE(qs.size() == 300);
  const std::vector<Question> again = synthetic_questions(300, 5), other = synthetic_questions(300, 6);
  bool differs = false;
  std::set<size_t> sizes;
  for (size_t n = 0; n < qs.size(); ++n) {
    const Question& q = qs[n];
    CAPTURE(n);
    CHECK(q.document == again[n].document);
    CHECK(q.query == again[n].query);
    CHECK(q.answer == again[n].answer);
    CHECK(q.candidates == again[n].candidates);
    differs = differs || q.document != other[n].document;
    CHECK(q.group == static_cast<int64_t>(n));

    REQUIRE(q.document.size() % 5 == 0);
    const size_t facts = q.document.size() / 5;
    sizes.insert(facts);
    CHECK(facts >= 2);
    CHECK(facts <= 4);
    REQUIRE(q.query.size() == 5);
    CHECK(q.query[0] == kPlaceholder);
    CHECK(q.candidates.size() == facts);
    CHECK(std::set<std::string>(q.candidates.begin(), q.candidates.end()).size() == facts);
    CHECK(std::count(q.candidates.begin(), q.candidates.end(), q.answer) == 1);
    int matches = 0;
    std::set<std::string> verbs, nouns;
    for (size_t f = 0; f < facts; ++f) {
      const Tokens fact(q.document.begin() + 5 * f, q.document.begin() + 5 * f + 5);
      CHECK(fact[0] == q.candidates[f]);
      CHECK(fact[2] == "the");
      CHECK(fact[4] == ".");
      verbs.insert(fact[1]);
      nouns.insert(fact[3]);
      if (fact[1] == q.query[1] && fact[3] == q.query[3]) {
        ++matches;
        CHECK(fact[0] == q.answer);
      }
    }
    CHECK(matches == 1);
    CHECK(verbs.size() == facts);  // no verb or noun repeats: either one identifies the fact
    CHECK(nouns.size() == facts);
  }
  CHECK(differs);
  CHECK(sizes == std::set<size_t>{2, 3, 4});
  CHECK(entity_count(qs) == 10);
  CHECK(anonymize(qs[0]).candidates.size() == qs[0].candidates.size());
  CHECK(synthetic_questions(0, 5).empty());
}

TEST_CASE("hold_out_tenth puts groups 9, 19, … in validation and never splits a group") {
  std::vector<Question> qs(100);
  for (size_t i = 0; i < qs.size(); ++i) {
    qs[i].group = static_cast<int64_t>(i / 3);
    qs[i].origin = std::to_string(i);
  }
  Split split = hold_out_tenth(qs);
  CHECK(split.valid.size() == 9);  // groups 9, 19 and 29, three questions each
  CHECK(split.train.size() == 91);
  std::set<int64_t> train_groups, valid_groups;
  for (const Question& q : split.train) train_groups.insert(q.group);
  for (const Question& q : split.valid) valid_groups.insert(q.group);
  CHECK(valid_groups == std::set<int64_t>{9, 19, 29});
  for (int64_t g : valid_groups) CHECK(train_groups.count(g) == 0);
  CHECK(split.train.front().origin == "0");
  CHECK(split.valid.front().origin == "27");  // order kept
}

TEST_CASE("the real bAbI task 1 (../shared/data), when present") {
  const fs::path dir = fs::path(RG_SHARED_DATA_DIR) / "babi" / "en";
  const fs::path file = dir / "qa1_single-supporting-fact_train.txt";
  if (!fs::exists(file)) {
    MESSAGE("skipped: " << file.string() << " does not exist (a fresh clone without ../shared/data)");
    return;
  }
  // 3000 lines: 200 stories of 15 lines, 10 statements and 5 questions each.
  std::vector<Question> qs = read_babi(file.string());
  CHECK(qs.size() == 1000);
  std::map<int64_t, int> per_story;
  for (const Question& q : qs) {
    ++per_story[q.group];
    CHECK(std::count(q.candidates.begin(), q.candidates.end(), q.answer) == 1);
    CHECK(std::find(q.document.begin(), q.document.end(), q.answer) != q.document.end());
  }
  CHECK(per_story.size() == 200);
  CHECK(per_story.begin()->first == 0);
  CHECK(per_story.rbegin()->first == 199);
  for (const auto& [story, count] : per_story) CHECK(count == 5);
  CHECK(qs[0].document == words("Mary moved to the bathroom . John went to the hallway ."));
  CHECK(qs[0].query == words("Where is Mary ?"));
  CHECK(qs[0].answer == "bathroom");
  CHECK(hold_out_tenth(qs).valid.size() == 100);

  // Every task parses, with its answer always a candidate.
  int tasks = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".txt") continue;
    ++tasks;
    CAPTURE(entry.path().string());
    for (const Question& q : read_babi(entry.path().string()))
      CHECK(std::count(q.candidates.begin(), q.candidates.end(), q.answer) == 1);
  }
  MESSAGE("real bAbI: " << tasks << " task files parse");
}

TEST_CASE("the real CBT question sample and book text (../shared/data), when present") {
  const fs::path dir = fs::path(RG_SHARED_DATA_DIR) / "cbt";
  const fs::path questions = dir / "hf_dummy_samples" / "cbtest_NE_train.txt";
  const fs::path valid = dir / "CBTest" / "data" / "cbt_valid.txt";
  if (!fs::exists(questions) || !fs::exists(valid)) {
    MESSAGE("skipped: " << dir.string() << " does not hold the CBT files (a fresh clone without ../shared/data)");
    return;
  }
  std::vector<Question> qs = read_cbt_questions(questions.string());
  REQUIRE(qs.size() == 1);
  CHECK(qs[0].answer == "Prigio");
  CHECK(qs[0].candidates.size() == 10);
  CHECK(qs[0].query == words("I think I 've told you that his name was @placeholder -- did I not ?"));
  CHECK(Tokens(qs[0].document.begin(), qs[0].document.begin() + 3) == words("Some were abroad"));
  CHECK(Tokens(qs[0].document.end() - 8, qs[0].document.end()) == words("Well , the little prince grew up ."));

  std::vector<Question> cloze = build_cbt_cloze(valid.string());
  CHECK(cloze.size() > 100);
  for (const Question& q : cloze) {
    CHECK(q.candidates.size() >= 2);
    CHECK(q.candidates.size() <= 10);
    CHECK(std::set<std::string>(q.candidates.begin(), q.candidates.end()).size() == q.candidates.size());
    CHECK(std::count(q.candidates.begin(), q.candidates.end(), q.answer) == 1);
    CHECK(std::isupper(static_cast<unsigned char>(q.answer[0])));
    CHECK(std::find(q.document.begin(), q.document.end(), q.answer) != q.document.end());
    CHECK(std::find(q.query.begin(), q.query.end(), kPlaceholder) != q.query.end());
    CHECK(std::find(q.query.begin(), q.query.end(), q.answer) == q.query.end());
  }
  ClozeOptions options;
  options.limit = 50;
  CHECK(build_cbt_cloze(valid.string(), options).size() == 50);
  const Split split = hold_out_tenth(cloze);
  MESSAGE("real CBT: " << cloze.size() << " cloze questions from cbt_valid.txt (" << split.valid.size()
                       << " held out); e.g. " << cloze[0].origin << " answer " << cloze[0].answer);
}
