#pragma once
// Using a trained RNNSearch: the teacher-forced loss of a set, detokenised
// beam-search translations, and --translate (a file through the best
// checkpoint of a finished run).
#include <cstdint>
#include <string>
#include <vector>

#include "rmsgrad/experiments/common/run.h"
#include "rmsgrad/experiments/rnnsearch/subword.h"
#include "rmsgrad/experiments/rnnsearch/translation_config.h"
#include "rmsgrad/models/rnnsearch.h"

namespace rg {

// Mean cross-entropy per real target token over a set, teacher forced, in eval mode.
double token_loss(RNNSearch& model, const EncodedPairs& pairs, int64_t batch);

// Subword ids back to text.
std::vector<std::string> detokenized(const Subword& subword, const std::vector<std::vector<int32_t>>& ids);

// One line per string; throws rg::Error naming the file when it cannot be written.
void write_lines(const std::string& path, const std::vector<std::string>& lines);

// --translate: the model settings from <out>/config.json, the weights from
// <out>/best.safetensors (else checkpoint.safetensors), the subwords from
// <out>/subword.model; one translation per line of cfg.translate, to
// cfg.output or stdout. Returns the exit code.
int translate_file(const TranslationConfig& cfg, const RunOptions& run_options);

}  // namespace rg
