#pragma once
// Text as characters for the language model driver (experiments/lm).
//
// The Children's Book Test ships the text of ten books in two files,
// cbt_valid.txt and cbt_test.txt, each book opening with a line
// "_BOOK_TITLE_ : <name>.txt.out". We train on nine books and validate on the
// tenth, a book the model never reads (`valid_book`, by default the first of
// cbt_valid.txt, Andrew Lang's The Grey Fairy Book). The title lines are
// dropped; everything else is kept byte for byte.
//
// The alphabet is every byte of the training books, in byte order, after id
// 0, which stands for any byte the training books never use.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rg::lm {

struct CharText {
  std::string alphabet;  // alphabet[id] is the byte of id ≥ 1; alphabet[0] is '?' (an unseen byte)
  std::vector<int32_t> train, valid;
  std::string description;  // for the run's log

  int64_t vocab() const { return static_cast<int64_t>(alphabet.size()); }
  std::string decode(const std::vector<int32_t>& ids) const;
};

// The ten CBT books in `dir` (the folder of cbt_valid.txt and cbt_test.txt),
// `valid_book` held out. Throws naming the file when one is missing, has no
// book, or `valid_book` names none of them.
CharText read_cbt_books(const std::string& dir, const std::string& valid_book = "Andrew_Lang___The_Grey_Fairy_Book");

// A synthetic stand-in when there is no data: sentences drawn from a small
// grammar (seeded), `chars` characters for training and a tenth of that for
// validation; a model that learns the grammar ends well under 2 bits per
// character.
CharText synthetic_text(int64_t chars, uint64_t seed);

// The ids of `text` in `alphabet` (unseen bytes → 0).
std::vector<int32_t> encode(const std::string& alphabet, std::string_view text);

}  // namespace rg::lm
