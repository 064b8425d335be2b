#pragma once
// Image–caption retrieval metrics, as the order-embedding paper reports them
// (Vendrov et al. 2016, Table 2; Zhang & Sennrich 2019, Table 7).
//
// A set of N images with K captions each (caption c describes image c / K) is
// scored by an error matrix E [N·K captions, N images], lower = better match.
//
//   caption retrieval (image → text): for image i, rank all N·K captions by
//     E[·, i]; its rank is the position of its best-ranked own caption.
//   image retrieval (text → image): for caption c, rank all N images by
//     E[c, ·]; its rank is the position of its own image.
//
// Ranks start at 0 here. R@k is the percentage of queries with rank < k; the
// median and mean rank are reported from 1 (med r = ⌊median⌋ + 1, mean r =
// mean + 1), as in Vendrov's code. Ties count against the model: an item
// ranks behind every wrong item whose error is equal to its own. Order
// embeddings make ties real, not hypothetical — every pair that satisfies the
// order exactly has error 0 — and a collapsed model that gives every pair the
// same error must score at chance, not at 100%.
//
// Test sets of MS-COCO size are scored in folds of 1,000 images (5,000
// captions) and the metrics averaged over folds; a smaller set is one fold.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "rmsgrad/core/tensor.h"

namespace rg::oe {

struct RecallStats {
  double r1 = 0, r5 = 0, r10 = 0;  // percent
  double med_r = 0, mean_r = 0;    // ranks from 1
};

struct RetrievalScores {
  RecallStats caption;  // image → text
  RecallStats image;    // text → image
  // The model-selection score: R@1 + R@5 + R@10 of image retrieval.
  double rsum() const { return image.r1 + image.r5 + image.r10; }
  // ("caption_r1", ...), ("image_r1", ...), ("rsum", ...) for metrics.jsonl.
  std::vector<std::pair<std::string, double>> fields() const;
};

// The 0-based ranks defined above, from E [N·K, N].
std::vector<int64_t> caption_ranks(const Tensor& errors, int64_t captions_per_image);  // one per image
std::vector<int64_t> image_ranks(const Tensor& errors, int64_t captions_per_image);    // one per caption

RecallStats recall_stats(const std::vector<int64_t>& ranks);
RetrievalScores retrieval_scores(const Tensor& errors, int64_t captions_per_image);

// Folds of `fold_images` images (the last fold takes the remainder's share: N
// images make max(1, N / fold_images) folds of nearly equal size). For each
// fold, errors_of(first_image, num_images) returns E for that fold's images
// and their captions; the scores are averaged over folds.
using FoldErrors = std::function<Tensor(int64_t first_image, int64_t num_images)>;
RetrievalScores fold_scores(int64_t num_images, int64_t captions_per_image, int64_t fold_images,
                            const FoldErrors& errors_of);

}  // namespace rg::oe
