#include "rmsgrad/core/atomic_file.h"
#include "rmsgrad/experiments/translation/translation_eval.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/experiments/common/text_file.h"
#include "rmsgrad/experiments/translation/beam_search.h"

namespace rg {

namespace fs = std::filesystem;

double token_loss(Seq2Seq& model, const EncodedPairs& pairs, int64_t batch) {
  NoGradGuard no_grad;
  model.eval();
  double total = 0.0, tokens = 0.0;
  for (int64_t first = 0; first < static_cast<int64_t>(pairs.size()); first += batch) {
    Batch indices;
    for (int64_t i = first; i < std::min<int64_t>(first + batch, pairs.size()); ++i) indices.push_back(i);
    TranslationBatch b = make_translation_batch(pairs, indices);
    double n = 0.0;
    for (int64_t len : b.target.lengths) n += static_cast<double>(len);
    total += model.token_cross_entropy(b.source.ids, b.source.mask, b.target.ids, b.target.mask).item() * n;
    tokens += n;
  }
  model.train();
  return tokens > 0 ? total / tokens : 0.0;
}

std::vector<std::string> detokenized(const Subword& subword, const std::vector<std::vector<int32_t>>& ids) {
  std::vector<std::string> text;
  text.reserve(ids.size());
  for (const auto& sentence : ids) text.push_back(subword.decode(std::vector<int>(sentence.begin(), sentence.end())));
  return text;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  // Whole or not at all, never through a link (core/atomic_file.h).
  std::string text;
  for (const std::string& line : lines) text += line + '\n';
  write_file_atomically(path, text);
}

}  // namespace rg
