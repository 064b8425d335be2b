// Retrieval ranks and recalls; the definitions are in retrieval.h.
#include "rmsgrad/experiments/order_embedding/retrieval.h"

#include <algorithm>
#include <cmath>

#include "rmsgrad/core/error.h"

namespace rg::oe {

namespace {

void check_errors(const Tensor& errors, int64_t k) {
  check(k > 0, "retrieval: captions per image must be positive, got {}", k);
  check(errors.rank() == 2 && errors.dim(0) == errors.dim(1) * k,
        "retrieval: errors must be [N·K captions, N images] with K = {}, got {}", k, errors.shape());
}

}  // namespace

std::vector<int64_t> caption_ranks(const Tensor& errors, int64_t k) {
  check_errors(errors, k);
  const int64_t n = errors.dim(1), captions = errors.dim(0);
  const float* e = errors.data();
  std::vector<int64_t> ranks(n);
  for (int64_t i = 0; i < n; ++i) {
    float best = e[(i * k) * n + i];
    for (int64_t c = i * k + 1; c < (i + 1) * k; ++c) best = std::min(best, e[c * n + i]);
    int64_t ahead = 0;  // wrong captions at least as good as the best right one
    for (int64_t c = 0; c < captions; ++c)
      if (c / k != i && e[c * n + i] <= best) ++ahead;
    ranks[i] = ahead;
  }
  return ranks;
}

std::vector<int64_t> image_ranks(const Tensor& errors, int64_t k) {
  check_errors(errors, k);
  const int64_t n = errors.dim(1), captions = errors.dim(0);
  std::vector<int64_t> ranks(captions);
  for (int64_t c = 0; c < captions; ++c) {
    const float* row = errors.data() + c * n;
    const int64_t own = c / k;
    int64_t ahead = 0;
    for (int64_t j = 0; j < n; ++j)
      if (j != own && row[j] <= row[own]) ++ahead;
    ranks[c] = ahead;
  }
  return ranks;
}

RecallStats recall_stats(const std::vector<int64_t>& ranks) {
  check(!ranks.empty(), "retrieval: no queries to score");
  const double n = static_cast<double>(ranks.size());
  auto recall_at = [&](int64_t at) {
    return 100.0 * static_cast<double>(std::count_if(ranks.begin(), ranks.end(), [&](int64_t r) { return r < at; })) /
           n;
  };
  std::vector<int64_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  const size_t mid = sorted.size() / 2;
  const double median =
      sorted.size() % 2 ? static_cast<double>(sorted[mid]) : 0.5 * static_cast<double>(sorted[mid - 1] + sorted[mid]);
  double total = 0;
  for (int64_t r : ranks) total += static_cast<double>(r);
  RecallStats s;
  s.r1 = recall_at(1);
  s.r5 = recall_at(5);
  s.r10 = recall_at(10);
  s.med_r = std::floor(median) + 1.0;
  s.mean_r = total / n + 1.0;
  return s;
}

RetrievalScores retrieval_scores(const Tensor& errors, int64_t k) {
  return {recall_stats(caption_ranks(errors, k)), recall_stats(image_ranks(errors, k))};
}

std::vector<std::pair<std::string, double>> RetrievalScores::fields() const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [name, s] : {std::pair{"caption", caption}, std::pair{"image", image}}) {
    const std::string prefix = name;
    out.emplace_back(prefix + "_r1", s.r1);
    out.emplace_back(prefix + "_r5", s.r5);
    out.emplace_back(prefix + "_r10", s.r10);
    out.emplace_back(prefix + "_med_r", s.med_r);
    out.emplace_back(prefix + "_mean_r", s.mean_r);
  }
  out.emplace_back("rsum", rsum());
  return out;
}

RetrievalScores fold_scores(int64_t num_images, int64_t k, int64_t fold_images, const FoldErrors& errors_of) {
  check(num_images > 0 && fold_images > 0, "retrieval: {} images in folds of {}", num_images, fold_images);
  const int64_t folds = std::max<int64_t>(1, num_images / fold_images);
  RetrievalScores mean;
  auto add = [&](RecallStats& into, const RecallStats& s) {
    into.r1 += s.r1 / folds;
    into.r5 += s.r5 / folds;
    into.r10 += s.r10 / folds;
    into.med_r += s.med_r / folds;
    into.mean_r += s.mean_r / folds;
  };
  for (int64_t f = 0; f < folds; ++f) {
    const int64_t first = f * num_images / folds, last = (f + 1) * num_images / folds;
    RetrievalScores s = retrieval_scores(errors_of(first, last - first), k);
    add(mean.caption, s.caption);
    add(mean.image, s.image);
  }
  return mean;
}

}  // namespace rg::oe
