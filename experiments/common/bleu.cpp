#include "rmsgrad/experiments/common/bleu.h"

#include <cmath>
#include <map>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "rmsgrad/core/error.h"

namespace rg {

std::string tokenize_13a(const std::string& input) {
  std::string line = input;
  auto replace_all = [&line](const std::string& from, const std::string& to) {
    for (size_t pos = 0; (pos = line.find(from, pos)) != std::string::npos; pos += to.size()) line.replace(pos, from.size(), to);
  };
  replace_all("<skipped>", "");
  replace_all("-\n", "");
  replace_all("\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all("&quot;", "\"");
    replace_all("&amp;", "&");
    replace_all("&lt;", "<");
    replace_all("&gt;", ">");
  }
  line = " " + line + " ";
  // The four substitutions of mteval-v13a, in order. Matching bytes rather
  // than characters gives the same result: each rule re-emits its groups.
  static const std::regex symbols(R"(([\{-\~\[-\` -\&\(-\+\:-\@\/]))");
  static const std::regex period_after_non_digit(R"(([^0-9])([\.,]))");
  static const std::regex period_before_non_digit(R"(([\.,])([^0-9]))");
  static const std::regex dash_after_digit(R"(([0-9])(-))");
  line = std::regex_replace(line, symbols, " $1 ");
  line = std::regex_replace(line, period_after_non_digit, "$1 $2 ");
  line = std::regex_replace(line, period_before_non_digit, " $1 $2");
  line = std::regex_replace(line, dash_after_digit, "$1 $2 ");
  // Single spaces between tokens, none at the ends (Python's str.split()).
  std::istringstream words(line);
  std::string word, out;
  while (words >> word) out += (out.empty() ? "" : " ") + word;
  return out;
}

namespace {

std::vector<std::string> split_tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) tokens.push_back(t);
  return tokens;
}

using NgramCounts = std::map<std::vector<std::string>, long>;

NgramCounts count_ngrams(const std::vector<std::string>& tokens) {
  NgramCounts counts;
  for (size_t n = 1; n <= 4; ++n)
    for (size_t i = 0; i + n <= tokens.size(); ++i) ++counts[{tokens.begin() + i, tokens.begin() + i + n}];
  return counts;
}

}  // namespace

BleuScore bleu_from_statistics(const std::array<long, 4>& matches, const std::array<long, 4>& totals, long hyp_len,
                               long ref_len) {
  BleuScore s;
  s.matches = matches;
  s.totals = totals;
  s.hyp_len = hyp_len;
  s.ref_len = ref_len;
  double smooth = 1.0;
  for (int n = 0; n < 4; ++n) {
    if (totals[n] == 0) break;  // the remaining precisions stay 0
    if (matches[n] == 0) {
      smooth *= 2.0;
      s.precisions[n] = 100.0 / (smooth * totals[n]);
    } else {
      s.precisions[n] = 100.0 * matches[n] / totals[n];
    }
  }
  s.brevity_penalty = hyp_len < ref_len ? (hyp_len > 0 ? std::exp(1.0 - double(ref_len) / hyp_len) : 0.0) : 1.0;
  double log_sum = 0.0;
  for (double p : s.precisions) log_sum += p > 0 ? std::log(p) : -9999999999.0;
  s.score = s.brevity_penalty * std::exp(log_sum / 4.0);
  return s;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references) {
  check(!references.empty(), "bleu: no reference stream");
  for (size_t k = 0; k < references.size(); ++k)
    check(references[k].size() == hypotheses.size(), "bleu: reference stream {} has {} lines, the hypotheses {}", k + 1,
          references[k].size(), hypotheses.size());
  std::array<long, 4> matches{}, totals{};
  long hyp_len = 0, ref_len = 0;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    std::vector<std::string> hyp = split_tokens(tokenize_13a(hypotheses[i]));
    NgramCounts ref_max;
    long closest = -1;
    for (const auto& stream : references) {
      std::vector<std::string> ref = split_tokens(tokenize_13a(stream[i]));
      const long len = static_cast<long>(ref.size()), h = static_cast<long>(hyp.size());
      if (closest < 0 || std::labs(len - h) < std::labs(closest - h) ||
          (std::labs(len - h) == std::labs(closest - h) && len < closest))
        closest = len;
      for (const auto& [gram, count] : count_ngrams(ref)) ref_max[gram] = std::max(ref_max[gram], count);
    }
    hyp_len += static_cast<long>(hyp.size());
    ref_len += closest;
    for (const auto& [gram, count] : count_ngrams(hyp)) {
      auto it = ref_max.find(gram);
      matches[gram.size() - 1] += std::min(count, it == ref_max.end() ? 0L : it->second);
    }
    for (size_t n = 1; n <= 4; ++n) totals[n - 1] += std::max<long>(0, static_cast<long>(hyp.size()) - long(n) + 1);
  }
  BleuScore s = bleu_from_statistics(matches, totals, hyp_len, ref_len);
  s.references = static_cast<int>(references.size());
  return s;
}

std::string BleuScore::signature() const {
  return fmt::format("nrefs:{}|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0", references);
}

std::string BleuScore::verbose() const {
  return fmt::format("{:.1f}/{:.1f}/{:.1f}/{:.1f} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})", precisions[0],
                     precisions[1], precisions[2], precisions[3], brevity_penalty, ratio(), hyp_len, ref_len);
}

std::string BleuScore::str(int decimals) const { return fmt::format("BLEU = {:.{}f} {}", score, decimals, verbose()); }

}  // namespace rg
