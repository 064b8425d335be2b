// Batched beam search; the algorithm is described in beam_search.h.
#include "rmsgrad/experiments/translation/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>

#include "rmsgrad/core/error.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/experiments/translation/subword.h"

namespace rg {

namespace {

constexpr float kDead = -std::numeric_limits<float>::infinity();

struct Candidate {
  float score;
  int32_t row, word;
  bool operator>(const Candidate& other) const { return score > other.score; }
};

struct Finished {
  std::vector<int32_t> tokens;  // without </s>
  float score;
  int64_t length;               // tokens, plus one for </s> when it ended there
};

// The `count` best extensions of the live rows [first, first + k) by
// score(row) + log_probs[row, word], best first.
std::vector<Candidate> best_extensions(const float* log_probs, int64_t vocab, const std::vector<float>& scores,
                                       int64_t first, int64_t k, int64_t count) {
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;  // the worst on top
  for (int64_t row = first; row < first + k; ++row) {
    const float base = scores[static_cast<size_t>(row)];
    if (base == kDead) continue;
    const float* lp = log_probs + row * vocab;
    for (int64_t word = 0; word < vocab; ++word) {
      const float s = base + lp[word];
      if (static_cast<int64_t>(heap.size()) < count) {
        heap.push({s, static_cast<int32_t>(row), static_cast<int32_t>(word)});
      } else if (s > heap.top().score) {
        heap.pop();
        heap.push({s, static_cast<int32_t>(row), static_cast<int32_t>(word)});
      }
    }
  }
  std::vector<Candidate> best;
  while (!heap.empty()) {
    best.push_back(heap.top());
    heap.pop();
  }
  std::reverse(best.begin(), best.end());
  return best;
}

}  // namespace

std::vector<std::vector<int32_t>> beam_search(Seq2Seq& model, const Indices& source, const Tensor& source_mask,
                                              const BeamOptions& options) {
  check(options.beam >= 1, "beam_search: beam size must be at least 1, got {}", options.beam);
  check(source.shape.rank() == 2 && source_mask.defined() && source_mask.shape() == source.shape,
        "beam_search: source {} and mask must be [S, B]", source.shape);
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();

  const int64_t steps = source.shape[0], batch = source.shape[1], k = options.beam;
  const int64_t vocab = model.target_vocab();
  std::unique_ptr<DecodingState> decoder = model.start_decoding(source, source_mask, k);

  std::vector<int64_t> max_length(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    float length = 0;
    for (int64_t t = 0; t < steps; ++t) length += source_mask.data()[t * batch + b];
    max_length[static_cast<size_t>(b)] =
        static_cast<int64_t>(options.max_length_ratio * length) + options.max_length_extra;
  }

  // Row b·k + j holds hypothesis j of sentence b. At the start only one row
  // per sentence is live, so the k identical rows do not fill the beam with copies.
  std::vector<float> scores(static_cast<size_t>(batch * k), kDead);
  for (int64_t b = 0; b < batch; ++b) scores[static_cast<size_t>(b * k)] = 0.0f;
  std::vector<std::vector<int32_t>> tokens(static_cast<size_t>(batch * k));
  std::vector<int32_t> previous(static_cast<size_t>(batch * k), -1);
  std::vector<std::vector<Finished>> finished(static_cast<size_t>(batch));
  std::vector<char> done(static_cast<size_t>(batch), 0);

  for (int64_t position = 0; std::count(done.begin(), done.end(), 0) > 0; ++position) {
    Var next = decoder->next(previous);
    check(next.shape() == Shape{batch * k, vocab}, "beam_search: the model gave log-probabilities {} for {} rows of {} words",
          next.shape(), batch * k, vocab);
    const float* log_probs = next.value().data();
    std::vector<int32_t> parents(static_cast<size_t>(batch * k));
    std::iota(parents.begin(), parents.end(), 0);
    std::vector<float> next_scores(static_cast<size_t>(batch * k), kDead);
    std::vector<std::vector<int32_t>> next_tokens(static_cast<size_t>(batch * k));
    std::vector<int32_t> next_previous(static_cast<size_t>(batch * k), kEosId);

    for (int64_t b = 0; b < batch; ++b) {
      auto& ended = finished[static_cast<size_t>(b)];
      if (done[static_cast<size_t>(b)]) continue;
      const int64_t room = k - static_cast<int64_t>(ended.size());
      const bool at_limit = position + 1 >= max_length[static_cast<size_t>(b)];
      int64_t slot = b * k;
      for (const Candidate& c : best_extensions(log_probs, vocab, scores, b * k, k, room)) {
        std::vector<int32_t> words = tokens[static_cast<size_t>(c.row)];
        if (c.word == kEosId) {
          const int64_t length = static_cast<int64_t>(words.size()) + 1;
          ended.push_back({std::move(words), c.score, length});
          continue;
        }
        words.push_back(c.word);
        if (at_limit) {
          const int64_t length = static_cast<int64_t>(words.size());
          ended.push_back({std::move(words), c.score, length});
          continue;
        }
        parents[static_cast<size_t>(slot)] = c.row;
        next_scores[static_cast<size_t>(slot)] = c.score;
        next_tokens[static_cast<size_t>(slot)] = std::move(words);
        next_previous[static_cast<size_t>(slot)] = c.word;
        ++slot;
      }
      if (static_cast<int64_t>(ended.size()) >= k || slot == b * k) done[static_cast<size_t>(b)] = 1;
    }
    scores = std::move(next_scores);
    tokens = std::move(next_tokens);
    previous = std::move(next_previous);
    decoder->reorder(parents);
  }
  if (was_training) model.train();

  std::vector<std::vector<int32_t>> result(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const auto& ended = finished[static_cast<size_t>(b)];
    check(!ended.empty(), "beam_search: sentence {} of the batch finished no hypothesis", b);
    auto normalized = [&](const Finished& f) {
      return options.length_norm == 0.0f ? f.score
                                         : f.score / std::pow(static_cast<float>(f.length), options.length_norm);
    };
    const Finished* best = &ended[0];
    for (const Finished& f : ended)
      if (normalized(f) > normalized(*best)) best = &f;
    result[static_cast<size_t>(b)] = best->tokens;
  }
  return result;
}

std::vector<std::vector<int32_t>> translate_all(Seq2Seq& model, const std::vector<std::vector<int32_t>>& sources,
                                                const BeamOptions& options, int64_t batch_size) {
  check(batch_size > 0, "translate_all: batch size must be positive, got {}", batch_size);
  std::vector<int64_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return sources[a].size() < sources[b].size(); });
  std::vector<std::vector<int32_t>> result(sources.size());
  for (size_t first = 0; first < order.size(); first += static_cast<size_t>(batch_size)) {
    const size_t last = std::min(order.size(), first + static_cast<size_t>(batch_size));
    Batch batch(order.begin() + static_cast<std::ptrdiff_t>(first), order.begin() + static_cast<std::ptrdiff_t>(last));
    for (int64_t i : batch)
      check(!sources[static_cast<size_t>(i)].empty(), "translate_all: sentence {} has no tokens (not even </s>)", i);
    PaddedBatch padded = pad_batch(sources, batch, kPadId);
    auto translations = beam_search(model, padded.ids, padded.mask, options);
    for (size_t j = 0; j < batch.size(); ++j) result[static_cast<size_t>(batch[j])] = std::move(translations[j]);
  }
  return result;
}

}  // namespace rg
