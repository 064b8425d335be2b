#include "rmsgrad/experiments/lm/char_text.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/experiments/common/file_status.h"
#include "rmsgrad/experiments/common/text_file.h"

namespace rg::lm {

namespace {

constexpr std::string_view kTitle = "_BOOK_TITLE_ : ";

struct Book {
  std::string name, text;
};

// The books of one CBT file, each its lines joined by '\n', the title line dropped.
std::vector<Book> read_books(const std::string& path) {
  check(path_exists(path), "lm: no {} (the CBT folder must hold cbt_valid.txt and cbt_test.txt)", path);
  std::vector<Book> books;
  for (const std::string& line : read_lines(path)) {
    if (line.starts_with(kTitle)) {
      std::string name = line.substr(kTitle.size());
      if (name.ends_with(".txt.out")) name.resize(name.size() - 8);
      books.push_back({std::move(name), {}});
      continue;
    }
    check(!books.empty(), "lm: {} does not open with a '{}' line", path, kTitle);
    books.back().text += line;
    books.back().text += '\n';
  }
  check(!books.empty(), "lm: {} holds no book", path);
  return books;
}

// Both texts in the training text's alphabet.
CharText encoded(const std::string& train_text, const std::string& valid_text) {
  std::array<bool, 256> seen{};
  for (char c : train_text) seen[static_cast<unsigned char>(c)] = true;
  CharText text;
  text.alphabet.assign(1, '?');
  for (int b = 0; b < 256; ++b)
    if (seen[static_cast<size_t>(b)]) text.alphabet += static_cast<char>(b);
  text.train = encode(text.alphabet, train_text);
  text.valid = encode(text.alphabet, valid_text);
  return text;
}

}  // namespace

std::string CharText::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (int32_t id : ids) text += alphabet[static_cast<size_t>(std::clamp<int32_t>(id, 0, vocab() - 1))];
  return text;
}

std::vector<int32_t> encode(const std::string& alphabet, std::string_view text) {
  std::array<int32_t, 256> id{};  // 0 for every byte the alphabet lacks
  for (size_t i = 1; i < alphabet.size(); ++i) id[static_cast<unsigned char>(alphabet[i])] = static_cast<int32_t>(i);
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = id[static_cast<unsigned char>(text[i])];
  return ids;
}

CharText read_cbt_books(const std::string& dir, const std::string& valid_book) {
  std::vector<Book> books;
  for (const char* file : {"cbt_valid.txt", "cbt_test.txt"})
    for (Book& book : read_books((std::filesystem::path(dir) / file).string())) books.push_back(std::move(book));
  std::string train_text, valid_text;
  int64_t train_books = 0;
  for (const Book& book : books) {
    if (book.name == valid_book) {
      valid_text += book.text;
    } else {
      train_text += book.text;
      ++train_books;
    }
  }
  check(!valid_text.empty(), "lm: no book named '{}' in {} (its books: {} in all)", valid_book, dir, books.size());
  CharText text = encoded(train_text, valid_text);
  text.description = fmt::format("CBT books in {}: {} characters of {} books for training, {} of '{}' for validation; "
                                 "{} symbols",
                                 dir, text.train.size(), train_books, text.valid.size(), valid_book, text.vocab());
  return text;
}

CharText synthetic_text(int64_t chars, uint64_t seed) {
  // Sentences "<subject> <verb> <object> ." with a few fixed pairings, so
  // that some of each word follows from the words before it.
  static const std::vector<std::string> subjects = {"the cat", "a dog", "the old king", "my sister", "the fox",
                                                     "a little bird", "the miller", "her brother"};
  static const std::vector<std::string> verbs = {"saw", "found", "chased", "loved", "met", "lost", "fed", "helped"};
  static const std::vector<std::string> objects = {"the mouse", "a golden key", "the river", "three apples",
                                                   "the queen", "a wooden boat", "the hen", "an owl"};
  Generator gen(seed);
  auto sentences = [&](int64_t n) {
    std::string out;
    while (static_cast<int64_t>(out.size()) < n) {
      const int64_t s = gen.randint(static_cast<int64_t>(subjects.size()));
      // The verb follows the subject half of the time; the object, the verb.
      const int64_t v = gen.randint(2) == 0 ? s : gen.randint(static_cast<int64_t>(verbs.size()));
      const int64_t o = gen.randint(2) == 0 ? v : gen.randint(static_cast<int64_t>(objects.size()));
      out += subjects[s] + " " + verbs[v] + " " + objects[o] + " .\n";
    }
    out.resize(static_cast<size_t>(n));
    return out;
  };
  const std::string train_text = sentences(chars), valid_text = sentences(std::max<int64_t>(chars / 10, 1));
  CharText text = encoded(train_text, valid_text);
  text.description = fmt::format("synthetic sentences (seed {}): {} characters for training, {} for validation; "
                                 "{} symbols",
                                 seed, text.train.size(), text.valid.size(), text.vocab());
  return text;
}

}  // namespace rg::lm
