// bleu HYP REF [REF ...]: corpus BLEU the way `sacrebleu REF < HYP` reports
// it (13a tokenisation, exponential smoothing, case-sensitive). Files may be
// plain or gzipped. --format text prints sacreBLEU's one-line text format.
#include <cstdio>
#include <string>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/bleu.h"
#include "rmsgrad/experiments/common/text_file.h"

int main(int argc, char** argv) {
  std::vector<std::string> files;
  bool text = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--format" && i + 1 < argc) {
      std::string f = argv[++i];
      if (f != "text" && f != "json") {
        std::fprintf(stderr, "error: --format must be json or text, got '%s'\n", f.c_str());
        return 2;
      }
      text = f == "text";
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: bleu [--format json|text] HYPOTHESES REFERENCE [REFERENCE ...]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "error: unknown option '%s' (see bleu --help)\n", a.c_str());
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.size() < 2) {
    std::fprintf(stderr, "error: need a hypothesis file and at least one reference (see bleu --help)\n");
    return 2;
  }
  try {
    std::vector<std::string> hyps = rg::read_lines(files[0]);
    std::vector<std::vector<std::string>> refs;
    for (size_t i = 1; i < files.size(); ++i) {
      refs.push_back(rg::read_lines(files[i]));
      rg::check(refs.back().size() == hyps.size(), "{} has {} lines but the hypotheses {} have {}", files[i],
                refs.back().size(), files[0], hyps.size());
    }
    rg::BleuScore s = rg::corpus_bleu(hyps, refs);
    if (text) {
      std::printf("BLEU|%s = %.1f %s\n", s.signature().c_str(), s.score, s.verbose().c_str());
    } else {
      std::printf("{\n \"name\": \"BLEU\",\n \"score\": %.1f,\n \"signature\": \"%s\",\n \"verbose_score\": \"%s\",\n"
                  " \"nrefs\": \"%d\",\n \"case\": \"mixed\",\n \"eff\": \"no\",\n \"tok\": \"13a\",\n"
                  " \"smooth\": \"exp\",\n \"version\": \"2.0.0\"\n}\n",
                  s.score, s.signature().c_str(), s.verbose().c_str(), s.references);
    }
  } catch (const rg::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
