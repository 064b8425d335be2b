#pragma once
// Corpus BLEU exactly as sacreBLEU computes it by default (Post 2018):
// tokenizer 13a, exponential smoothing, case-sensitive, on detokenised text,
// any number of reference streams.
//
//   tokenize_13a   mteval-v13a's tokenisation: split off punctuation and
//                  symbols, periods and commas unless next to digits, dashes
//                  after digits; unescape &quot; &amp; &lt; &gt;
//   statistics     per n = 1..4: clipped matches (hypothesis n-gram counts
//                  clipped by their maximum count in any reference) and totals
//   brevity        r = the reference length closest to each hypothesis's
//                  (the shorter on ties), BP = exp(1 − r/c) when c < r
//   smoothing exp  the k-th order with zero matches gets precision 1/(2^k · total)
//   score          100 · BP · exp(mean of log precisions)
//
// The signature's version field names the sacreBLEU release whose default
// behaviour this reproduces (tested against its published scores).
#include <array>
#include <string>
#include <vector>

namespace rg {

std::string tokenize_13a(const std::string& line);

struct BleuScore {
  double score = 0;                     // 0..100
  std::array<double, 4> precisions{};   // percent
  std::array<long, 4> matches{}, totals{};
  double brevity_penalty = 0;
  long hyp_len = 0, ref_len = 0;
  int references = 1;
  double ratio() const { return ref_len ? double(hyp_len) / ref_len : 0.0; }
  // "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0"
  std::string signature() const;
  // "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)"
  std::string str(int decimals = 2) const;
  // "82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)"
  std::string verbose() const;
};

// hypotheses[i] is scored against references[k][i] for every stream k.
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references);

// The final step alone, from statistics (sacreBLEU's compute_bleu).
BleuScore bleu_from_statistics(const std::array<long, 4>& matches, const std::array<long, 4>& totals, long hyp_len,
                               long ref_len);

}  // namespace rg
