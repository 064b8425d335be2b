// The questions the attentive reader's data code builds itself
// (experiments/attentive_reader/question_builders.cpp): cloze questions from
// CBT book text written here, anonymisation, the synthetic task and the
// validation hold-out.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/attentive_reader/reading_data.h"
#include "rmsgrad/experiments/common/vocab.h"
#include "test_util.h"

using namespace rg;
using namespace rg::reader;

namespace {

using test::check_error;
using test::error_of;
using test::TempDir;
using Tokens = std::vector<std::string>;

std::string write_text(const TempDir& dir, const std::string& name, const std::string& text) {
  return dir.write(name, text);
}

Tokens words(const std::string& text) { return split_tokens(text); }

}  // namespace

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
