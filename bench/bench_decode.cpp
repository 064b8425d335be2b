// Times beam-search translation with the Transformer (models/transformer.h,
// experiments/translation/beam_search.h), with the decoder's key/value cache
// (model.cached_decoding = true: position t costs O(t)) against rerunning the
// whole decoder on the prefix at every position (false: O(t²)).
//
//   bench_decode [--threads 1] [--beam 5] [--sentences 40] [--length 25] [--repeats 3] [--warmup 1]
//                [--norm layernorm] [--position post]
//
// The model: bench_step's Transformer sizes (bench/model_steps/transformer_step.h;
// d 256, FFN 1024, 4 heads, 3 + 3 layers, vocabularies of 8000), random
// weights from generator 0 (the model's own init), in evaluation mode.
// The sentences: --sentences sources of 13–22 subwords (sentence b has
// 13 + (7b) mod 10), ids uniform in [4, 8000) from generator 2, the last
// </s>; translated by translate_all in one batch at --beam.
//
// Length: BeamOptions max_length_ratio 0 and max_length_extra = --length, so
// every sentence stops after exactly --length positions (its live hypotheses
// are then finished as they stand), unless --beam hypotheses end in </s>
// first — unlikely with random weights (</s> is one word in 8000), and then
// both modes stop at the same place anyway. The work per sentence is thus
// fixed, independent of what the random model prefers.
//
// Each mode translates the sentences --warmup times untimed, then --repeats
// times timed; the median counts. Prints one JSON line: {"impl": "rmsgrad",
// "model": "transformer", "norm", "position", "threads", "beam", "sentences",
// "length", <sizes>, "cached_ms", "uncached_ms" (median ms for all the
// sentences), "cached_sentences_per_second", "uncached_sentences_per_second",
// "speedup" (uncached ÷ cached time), "same_translations" (both modes gave
// identical ids for every sentence), "differing_sentences"}.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <vector>

#include "bench/bench_cli.h"
#include "bench/step_timing.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/experiments/translation/beam_search.h"
#include "rmsgrad/experiments/translation/subword.h"
#include "rmsgrad/models/transformer.h"

using namespace rg;

int main(int argc, char** argv) {
  rg::restart_with_polite_threads(argv);  // as the drivers run: short OpenMP spins
  int threads = 1, beam = 5, repeats = 3, warmup = 1;
  int64_t sentences = 40, length = 25, vocab = 8000, d = 256, ffn = 1024, heads = 4, layers = 3;
  std::string norm = "layernorm", position = "post";
  CLI::App app{"Beam-search translation with the Transformer, with and without the decoder's cache",
               "bench_decode"};
  app.add_option("--threads", threads, "threads")->check(CLI::PositiveNumber);
  app.add_option("--beam", beam, "beam size")->check(CLI::PositiveNumber);
  app.add_option("--sentences", sentences, "source sentences, translated in one batch")->check(CLI::PositiveNumber);
  app.add_option("--length", length, "target positions decoded per sentence (max_length_extra)")
      ->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "timed translations of all the sentences, per mode")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed translations first, per mode")->check(CLI::NonNegativeNumber);
  app.add_option("--norm", norm, "the normalization");
  app.add_option("--position", position, "post or pre")->check(CLI::IsMember({"post", "pre"}));
  app.add_option("--vocab", vocab, "source and target vocabulary")->check(CLI::Range(int64_t{5}, int64_t{1} << 30));
  app.add_option("--d", d, "model size")->check(CLI::PositiveNumber);
  app.add_option("--ffn", ffn, "feed-forward width")->check(CLI::PositiveNumber);
  app.add_option("--heads", heads, "attention heads")->check(CLI::PositiveNumber);
  app.add_option("--layers", layers, "encoder layers, and as many decoder layers")->check(CLI::PositiveNumber);
  if (int code = bench::parse_bench_flags(app, argc, argv); code >= 0) return code;
  try {
    set_num_threads(threads);
    TransformerOptions o;
    o.source_vocab = o.target_vocab = vocab;
    o.encoder_layers = o.decoder_layers = layers;
    o.layer.model_size = d;
    o.layer.ffn_size = ffn;
    o.layer.heads = heads;
    o.layer.norm.kind = parse_norm_kind(norm);
    o.layer.norm_position = parse_norm_position(position);
    Generator init_gen(0), noise_gen(1), data_gen(2);
    Transformer model(o, init_gen, noise_gen);
    model.eval();

    std::vector<std::vector<int32_t>> sources(static_cast<size_t>(sentences));
    for (int64_t b = 0; b < sentences; ++b) {
      auto& s = sources[static_cast<size_t>(b)];
      const int64_t n = 13 + (7 * b) % 10;
      for (int64_t t = 0; t + 1 < n; ++t) s.push_back(4 + static_cast<int32_t>(data_gen.randint(vocab - 4)));
      s.push_back(kEosId);
    }
    BeamOptions beam_options;
    beam_options.beam = beam;
    beam_options.max_length_ratio = 0.0f;
    beam_options.max_length_extra = length;

    std::vector<std::vector<int32_t>> translations[2];
    double ms[2];
    for (int mode = 0; mode < 2; ++mode) {  // 0: cached, 1: uncached
      model.cached_decoding = mode == 0;
      const std::vector<double> times = bench::time_steps(
          [&] { translations[mode] = translate_all(model, sources, beam_options, sentences); }, warmup, repeats);
      ms[mode] = bench::median_of(times);
    }
    int64_t differing = 0, decoded = 0;
    for (size_t i = 0; i < sources.size(); ++i) {
      differing += translations[0][i] != translations[1][i];
      decoded += static_cast<int64_t>(translations[0][i].size());
    }
    const double n = static_cast<double>(sentences);
    std::printf("{\"impl\": \"rmsgrad\", \"model\": \"transformer\", \"norm\": \"%s\", \"position\": \"%s\", "
                "\"threads\": %d, \"beam\": %d, \"sentences\": %lld, \"length\": %lld, \"vocab\": %lld, \"d\": %lld, "
                "\"ffn\": %lld, \"heads\": %lld, \"layers\": %lld, \"mean_output_tokens\": %.2f, "
                "\"cached_ms\": %.3f, \"uncached_ms\": %.3f, \"cached_sentences_per_second\": %.3f, "
                "\"uncached_sentences_per_second\": %.3f, \"speedup\": %.3f, \"same_translations\": %s, "
                "\"differing_sentences\": %lld}\n",
                norm.c_str(), position.c_str(), threads, beam, static_cast<long long>(sentences),
                static_cast<long long>(length), static_cast<long long>(vocab), static_cast<long long>(d),
                static_cast<long long>(ffn), static_cast<long long>(heads), static_cast<long long>(layers),
                static_cast<double>(decoded) / n, ms[0], ms[1], 1e3 * n / ms[0], 1e3 * n / ms[1], ms[1] / ms[0],
                differing == 0 ? "true" : "false", static_cast<long long>(differing));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_decode: %s\n", e.what());
    return 1;
  }
}
