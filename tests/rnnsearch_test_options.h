#pragma once
// A tiny RNNSearch for tests: vocabularies of 13 and 11, embeddings 6,
// hidden 5, attention 7, no dropout, and weights drawn with a standard
// deviation larger than Nematus' 0.01, so every path carries signal at this size.
#include "rmsgrad/models/rnnsearch.h"

namespace rg::test {

inline RNNSearchOptions tiny_rnnsearch_options(NormKind norm, float stddev = 0.3f) {
  RNNSearchOptions o;
  o.source_vocab = 13;
  o.target_vocab = 11;
  o.embed = 6;
  o.hidden = 5;
  o.attention = 7;
  o.norm.kind = norm;
  o.dropout = 0.0f;
  o.init_stddev = stddev;
  return o;
}

}  // namespace rg::test
