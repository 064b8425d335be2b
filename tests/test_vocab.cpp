// Vocabularies (experiments/common/vocab.h): reserved ids, order by count,
// <unk>, and the file format with its errors.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "rmsgrad/experiments/common/vocab.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;

TEST_CASE("vocab: reserved ids, counts order, <unk>, and a round trip through the file") {
  TokenCounts counts;
  count_tokens("the cat sat on the mat\nthe dog", counts);
  count_tokens("a  cat\tran", counts);
  Vocab vocab = Vocab::from_counts(counts, 1, 0);
  CHECK(vocab.id("<pad>") == 0);
  CHECK(Vocab::kPad == 0);
  CHECK(vocab.id("<unk>") == Vocab::kUnk);
  CHECK(vocab.id("<s>") == Vocab::kBos);
  CHECK(vocab.id("</s>") == Vocab::kEos);
  CHECK(vocab.token(4) == "the");  // 3 times
  CHECK(vocab.token(5) == "cat");  // 2 times
  CHECK(vocab.token(6) == "a");    // then by bytes
  CHECK(vocab.size() == 4 + 8);
  CHECK(vocab.id("zebra") == Vocab::kUnk);
  CHECK(vocab.encode("the zebra sat") == std::vector<int32_t>{4, Vocab::kUnk, vocab.id("sat")});
  std::vector<int32_t> ids = {Vocab::kBos, 4, 5, Vocab::kEos, 0, 0};
  CHECK(vocab.decode(ids) == "the cat");

  Vocab limited = Vocab::from_counts(counts, 2, 0);
  CHECK(limited.size() == 6);
  CHECK(Vocab::from_counts(counts, 1, 5).size() == 5);
  CHECK(Vocab::from_counts(counts, 1, 5).token(4) == "the");

  const test::TempDir tmp("vocab");
  const std::filesystem::path& dir = tmp.path;
  vocab.save((dir / "vocab.txt").string());
  Vocab loaded = Vocab::load((dir / "vocab.txt").string());
  REQUIRE(loaded.size() == vocab.size());
  for (int32_t i = 0; i < vocab.size(); ++i) CHECK(loaded.token(i) == vocab.token(i));
  CHECK(loaded.id("zebra") == Vocab::kUnk);

  std::ofstream(dir / "bad.txt") << "<pad>\n<unk>\n<s>\n</s>\ncat\ndog\ncat\n";
  CHECK_THROWS_WITH_AS(Vocab::load((dir / "bad.txt").string()), doctest::Contains("line 7: 'cat' repeats line 5"),
                       Error);
  std::ofstream(dir / "unreserved.txt") << "cat\n";
  CHECK_THROWS_WITH_AS(Vocab::load((dir / "unreserved.txt").string()),
                       doctest::Contains("expected the reserved token <pad>"), Error);
  CHECK_THROWS_WITH_AS(Vocab::load((dir / "missing.txt").string()), doctest::Contains("missing.txt"), Error);
}
