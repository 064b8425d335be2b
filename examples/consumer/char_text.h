#pragma once
// A text file as characters to train on, for the character models of this
// project (char_gru, char_decoder): its bytes, and its alphabet — every byte
// that occurs, in byte order, numbered from 0.
#include <rmsgrad/core/error.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

struct CharText {
  std::string text;
  std::string alphabet;              // alphabet[id] is the character numbered id
  std::array<int32_t, 256> id = {};  // id[byte]: that byte's number (0 for bytes the text lacks)

  int32_t operator[](char c) const { return id[static_cast<unsigned char>(c)]; }
};

// The file's bytes; an rg::Error when it cannot be read or holds fewer than
// `at_least` characters.
inline CharText read_char_text(const std::string& path, int64_t at_least) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw rg::Error("cannot open the text file " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  CharText out{.text = bytes.str()};
  if (static_cast<int64_t>(out.text.size()) < at_least)
    throw rg::Error(path + ": the text is too short to train on (at least " + std::to_string(at_least) +
                    " characters)");
  std::array<bool, 256> seen = {};
  for (char c : out.text) seen[static_cast<unsigned char>(c)] = true;
  for (int byte = 0; byte < 256; ++byte)
    if (seen[static_cast<size_t>(byte)]) {
      out.id[static_cast<size_t>(byte)] = static_cast<int32_t>(out.alphabet.size());
      out.alphabet.push_back(static_cast<char>(byte));
    }
  return out;
}
