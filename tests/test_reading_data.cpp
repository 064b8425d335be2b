// The attentive reader's question readers (DeepMind .question, bAbI, CBT
// questions) on small files written here, with exact tokens, answers and
// candidates, and every malformed input giving an error that names the file
// and line; the top4 filter on a worked example; and the real bAbI and CBT
// files (with the cloze builder) in ../shared/data when present. The
// questions the project builds itself are tested in test_question_builders.cpp.
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

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/attentive_reader/reading_data.h"
#include "rmsgrad/experiments/common/vocab.h"
#include "test_util.h"

using namespace rg;
using namespace rg::reader;
namespace fs = std::filesystem;

namespace {

using test::error_of;
using test::TempDir;
using Tokens = std::vector<std::string>;

using test::check_error;

std::string write_text(const TempDir& dir, const std::string& name, const std::string& text) {
  return dir.write(name, text);
}

Tokens words(const std::string& text) { return split_tokens(text); }

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
