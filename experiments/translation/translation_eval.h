#pragma once
// Using a trained translation model: the teacher-forced loss of a set and
// detokenised translations.
#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/experiments/translation/subword.h"
#include "rmsgrad/experiments/translation/translation_data.h"
#include "rmsgrad/models/seq2seq.h"

namespace rg {

// Mean cross-entropy per real target token over a set, teacher forced, in eval mode.
double token_loss(Seq2Seq& model, const EncodedPairs& pairs, int64_t batch);

// Subword ids back to text.
std::vector<std::string> detokenized(const Subword& subword, const std::vector<std::vector<int32_t>>& ids);

// One line per string, written whole through a temporary file; throws rg::Error
// naming the file and the cause when it cannot be written.
void write_lines(const std::string& path, const std::vector<std::string>& lines);

}  // namespace rg
