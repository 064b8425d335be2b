// The translation data pipeline: parallel files (plain and gzip, aligned,
// valid UTF-8, every error naming the file and line), SentencePiece BPE
// trained on the text (ids, round trip, determinism), the length filter, and
// batches that hold every pair once per epoch with masks that match the
// sentences.
#include <doctest/doctest.h>
#include <zlib.h>

#include <filesystem>
#include <set>

#include "rmsgrad/experiments/translation/subword.h"
#include "rmsgrad/experiments/translation/synthetic_translation.h"
#include "rmsgrad/experiments/translation/translation_data.h"
#include "test_util.h"

using namespace rg;
namespace fs = std::filesystem;
using test::check_error;
using test::TempDir;

namespace {

void write_gzip(const std::string& path, const std::string& text) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  gzclose(file);
}

// A small corpus of the synthetic task and its SentencePiece model, trained once.
struct SmallCorpus {
  TempDir dir{"translation_data"};
  ParallelText text;
  std::string model;
  SmallCorpus() {
    SyntheticTranslationOptions o;
    o.pairs = 600;
    o.seed = 7;
    o.max_words = 12;
    text = synthetic_translation(o);
    std::vector<std::string> both = text.source;
    both.insert(both.end(), text.target.begin(), text.target.end());
    model = dir.file("bpe.model");
    Subword::train(both, 200, model);
  }
};

}  // namespace

TEST_CASE("parallel text: plain and gzip files read alike; misaligned, invalid or missing files are clear errors") {
  TempDir tmp("parallel");
  const std::string de = "Ein Hund läuft.\nZwei Katzen schlafen.\n", en = "A dog runs.\nTwo cats sleep.\n";
  const std::string src = tmp.write("a.de", de), tgt = tmp.write("a.en", en);
  write_gzip(tmp.file("a.de.gz"), de);
  write_gzip(tmp.file("a.en.gz"), en);
  ParallelText plain = read_parallel_text(src, tgt), zipped = read_parallel_text(tmp.file("a.de.gz"), tmp.file("a.en.gz"));
  REQUIRE(plain.size() == 2);
  CHECK(plain.source[0] == "Ein Hund läuft.");
  CHECK(plain.target[1] == "Two cats sleep.");
  CHECK(zipped.source == plain.source);
  CHECK(zipped.target == plain.target);

  const std::string short_en = tmp.write("short.en", "A dog runs.\n");
  check_error([&] { read_parallel_text(src, short_en); }, "short.en has 1", "must align line by line");
  const std::string bad = tmp.write("bad.de", "gut\nschl\xe4" "ft\n");  // Latin-1 ä on line 2
  check_error([&] { read_parallel_text(bad, tgt); }, "bad.de:2", "UTF-8");
  check_error([&] { read_parallel_text(tmp.file("missing.de"), tgt); }, "missing.de", "");
  const std::string torn = tmp.file("torn.de.gz");
  write_gzip(torn, std::string(2000, 'x') + "\n");
  fs::resize_file(torn, fs::file_size(torn) / 2);
  check_error([&] { read_parallel_text(torn, tgt); }, "torn.de.gz", "");
}

TEST_CASE("SentencePiece BPE: reserved ids, lossless round trip, the same model from the same text") {
  SmallCorpus corpus;
  Subword subword(corpus.model);
  CHECK(subword.vocab_size() == 200);
  for (size_t i = 0; i < 50; ++i) {
    std::vector<int> ids = subword.encode(corpus.text.target[i]);
    REQUIRE(!ids.empty());
    for (int id : ids) CHECK((id == kUnkId || id > kEosId));  // never <pad>, <s>, </s>
    CHECK(subword.decode(ids) == corpus.text.target[i]);
    CHECK(subword.decode(std::vector<int>(ids.begin(), ids.end())) == corpus.text.target[i]);
  }
  // decode stops at </s> and skips <pad>.
  std::vector<int> ids = subword.encode(corpus.text.source[0]);
  std::vector<int> padded = ids;
  padded.push_back(kEosId);
  padded.push_back(ids[0]);
  padded.insert(padded.begin(), kPadId);
  CHECK(subword.decode(padded) == corpus.text.source[0]);

  // Training again on the same text gives the same pieces.
  std::vector<std::string> both = corpus.text.source;
  both.insert(both.end(), corpus.text.target.begin(), corpus.text.target.end());
  Subword::train(both, 200, corpus.dir.file("again.model"));
  Subword again(corpus.dir.file("again.model"));
  for (size_t i = 0; i < 20; ++i) CHECK(again.encode(corpus.text.source[i]) == subword.encode(corpus.text.source[i]));

  check_error([&] { Subword(corpus.dir.file("nothing.model")); }, "nothing.model", "does not exist");
  const std::string garbage = corpus.dir.write("garbage.model", "this is not a model");
  check_error([&] { Subword{garbage}; }, "garbage.model", "is not a SentencePiece model");
}

TEST_CASE("encode_pairs: </s> on both sides, long and empty pairs dropped and counted, lines remembered") {
  SmallCorpus corpus;
  Subword subword(corpus.model);
  ParallelText text;
  text.source = {corpus.text.source[0], "", corpus.text.source[2], corpus.text.source[3]};
  text.target = {corpus.text.target[0], corpus.text.target[1], corpus.text.target[2], corpus.text.target[3]};
  const int64_t len2 = static_cast<int64_t>(subword.encode(text.source[2]).size());
  const int64_t longest_other = static_cast<int64_t>(std::max(
      {subword.encode(text.source[0]).size(), subword.encode(text.target[0]).size(),
       subword.encode(text.source[3]).size(), subword.encode(text.target[3]).size()}));
  // Make pair 2 the longest by repeating its source.
  text.source[2] = text.source[2] + " " + text.source[2] + " " + text.source[2];
  const int64_t limit = std::max(longest_other, len2);
  EncodedPairs pairs = encode_pairs(text, subword, limit);
  CHECK(pairs.size() == 2);
  CHECK(pairs.dropped_empty == 1);
  CHECK(pairs.dropped_long == 1);
  CHECK(pairs.line == std::vector<int64_t>{0, 3});
  for (size_t i = 0; i < pairs.size(); ++i) {
    CHECK(pairs.source[i].back() == kEosId);
    CHECK(pairs.target[i].back() == kEosId);
  }
  std::vector<int> body(pairs.target[1].begin(), pairs.target[1].end() - 1);
  CHECK(subword.decode(body) == text.target[3]);
  CHECK(encode_pairs(text, subword, 0).dropped_long == 0);  // 0: no filter
}

TEST_CASE("translation batches: every pair once per epoch, padding masked, buckets keep lengths close") {
  SmallCorpus corpus;
  Subword subword(corpus.model);
  EncodedPairs pairs = encode_pairs(corpus.text, subword, 80);
  REQUIRE(pairs.size() == corpus.text.size());
  BucketOptions options;
  options.max_sentences = 16;
  // Target cells that are padding, over one epoch's batches; checks every batch on the way.
  auto padding_fraction = [&](const EpochPlan& plan, std::multiset<int64_t>& seen) {
    double padding = 0, cells = 0;
    for (const Batch& batch : plan) {
      CHECK(batch.size() <= 16);
      TranslationBatch b = make_translation_batch(pairs, batch);
      REQUIRE(b.source.batch_size() == static_cast<int64_t>(batch.size()));
      REQUIRE(b.target.batch_size() == static_cast<int64_t>(batch.size()));
      const int64_t steps = b.target.time_steps(), width = b.target.batch_size();
      for (size_t j = 0; j < batch.size(); ++j) {
        seen.insert(batch[j]);
        const auto& target = pairs.target[static_cast<size_t>(batch[j])];
        for (int64_t t = 0; t < steps; ++t) {
          const bool real = t < static_cast<int64_t>(target.size());
          const int64_t cell = t * width + static_cast<int64_t>(j);
          CHECK(b.target.mask.data()[cell] == (real ? 1.0f : 0.0f));
          CHECK(b.target.ids.values[static_cast<size_t>(cell)] == (real ? target[static_cast<size_t>(t)] : kPadId));
          padding += real ? 0 : 1;
          cells += 1;
        }
      }
    }
    return padding / cells;
  };
  Generator gen(3);
  std::multiset<int64_t> seen, seen_random;
  const double bucketed = padding_fraction(translation_batches(pairs, options)(gen), seen);
  CHECK(seen.size() == pairs.size());
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == pairs.size());
  // Batches of random sentences pad far more than sorted buckets.
  const double random = padding_fraction(shuffled_batches(static_cast<int64_t>(pairs.size()), 16)(gen), seen_random);
  CAPTURE(bucketed);
  CAPTURE(random);
  CHECK(bucketed < 0.5 * random);
}
