#pragma once
// The sizes bench_memory trains each paper model at (the models are
// bench/model_steps, the same steps the timing benchmarks run):
//
//   bench     the model's benchmark recipe (its defaults in model_steps)
//   real      the real-data commands of the reproduction report
//             (experiments/README.md): Multi30k RNNSearch (batch 80, 8,000 subwords, sentences of up to 39 words: the longest batch
//             is about 50 × 50 subwords); the attentive reader on bAbI task 1
//             (batch 32, 64 units, stories of up to ~70 tokens, a ~40-word
//             vocabulary). ConvPool-CNN-C and the order-embedding model run at
//             their benchmark sizes in the reproduction report too.
//   longest   RNNSearch's longest Multi30k batch: the report's SentencePiece
//             model cuts the longest German sentence into 53 subwords and the
//             longest English one into 49 (with </s>)
//   worst     RNNSearch's longest batch the driver admits (pairs of up to 80 subwords)
#include <string>

#include "bench/model_steps/model_step.h"
#include "rmsgrad/core/error.h"

namespace rg::bench {

inline Sizes memory_sizes(const std::string& preset, const std::string& model) {
  check(preset == "bench" || preset == "real" || preset == "longest" || preset == "worst",
        "bench_memory: --sizes is bench, real, longest or worst, not '{}'", preset);
  Sizes sizes;
  if (preset == "bench") return sizes;
  if (model == "rnnsearch") {
    const char* length = preset == "real" ? "50" : preset == "longest" ? "53" : "80";
    sizes.set(std::string("src_len=") + length);
    sizes.set(preset == "longest" ? "tgt_len=49" : std::string("tgt_len=") + length);
  } else if (model == "reader") {
    for (const char* assignment : {"batch=32", "doc_len=70", "vocab=40", "embed=64", "hidden=64"}) sizes.set(assignment);
  }
  return sizes;
}

}  // namespace rg::bench
