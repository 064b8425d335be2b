#pragma once
// Data for image–caption retrieval: image feature matrices with K captions
// per image, the deterministic train/valid/test split by image, the synthetic
// default task, and batches in which every image appears at most once.
//
// Layout everywhere: N images, N·K captions, caption c describes image c / K
// (the K captions of an image are consecutive).
//
// Files:
//   features   a NumPy .npy matrix (N, D), float16 or float32 (common/npy.h)
//   captions   either K files of N lines each (caption k of image i on line i
//              of file k; Multi30k's test_2016.{1..5}.en.gz), or one file of
//              N·K lines grouped by image (lines iK … iK+K−1 describe image
//              i; K from --captions-per-image). Plain or gzipped UTF-8.
//
// Words: a caption is lower-cased (ASCII) and cut into maximal runs of
// letters, digits and non-ASCII bytes; everything else (spaces, punctuation)
// separates words and is dropped: "A man's hat." → a man s hat.
//
// The split by image is fixed and interleaved, so that it mixes whatever
// order the images come in: image i is validation when i mod 10 = 8, test
// when i mod 10 = 9, training otherwise (80/10/10; Multi30k's 1,000 images
// give 800/100/100). The vocabulary holds the training captions' words seen
// at least min_count times; rarer and unseen words become <unk>.
//
// The synthetic task: each image holds 1–3 distinct objects, each a noun (24)
// with a colour (12). An object's feature vector is relu(noun_n + colour_c)
// for fixed random vectors noun_n, colour_c ~ N(0, I): the relu makes the
// features depend on which colour goes with which noun, not just on which
// colours and nouns occur. An image is the sum of its objects plus
// non-negative noise 0.5·|N(0, 1)| in every coordinate. Its K captions name
// every object with its colour, in a random order, with varied connectives
// ("a photo of a red dog next to a blue cat"), so a caption encoder must bind
// colours to nouns to retrieve the image.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rmsgrad/core/random.h"
#include "rmsgrad/core/tensor.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/experiments/common/vocab.h"

namespace rg::oe {

std::vector<std::string> caption_words(std::string_view caption);

struct CaptionCorpus {
  Tensor features;                    // [N, D]
  std::vector<std::string> captions;  // N·K, grouped by image
  int64_t captions_per_image = 0;
  std::string description;  // where it came from, for the log
  int64_t num_images() const { return features.dim(0); }
};

// Reads a corpus as described above. Throws rg::Error naming the file when a
// caption file's line count does not fit the features' rows, a caption has
// no word (file and line), or the features are not a readable .npy matrix.
CaptionCorpus read_corpus(const std::string& features_path, const std::vector<std::string>& caption_paths,
                          int64_t captions_per_image);

// The synthetic task above, deterministic by seed.
CaptionCorpus synthetic_corpus(int64_t num_images, int64_t image_dim, int64_t captions_per_image, uint64_t seed);

struct RetrievalSet {
  Tensor features;                             // [N, D]
  std::vector<std::vector<int32_t>> captions;  // N·K token ids
  int64_t captions_per_image = 0;
  int64_t num_images() const { return features.defined() ? features.dim(0) : 0; }
};

struct Splits {
  RetrievalSet train, valid, test;
  Vocab vocab;
  std::string description;
};

Splits split_corpus(const CaptionCorpus& corpus, int64_t min_count);

// Batches of up to `batch_size` captions (caption indices) in which no image
// appears twice, since an image's other captions would be false negatives in
// the contrastive loss. An epoch visits every caption once, in K passes; pass
// p pairs every image with one of its captions (each image's captions taken
// in its own random order), shuffles those N pairs, sorts chunks of 20
// batches by caption length (less padding) and cuts them into batches. The
// batches of each pass are shuffled. Batches of a single caption are dropped.
EpochPlanner distinct_image_batches(std::vector<int64_t> caption_lengths, int64_t captions_per_image,
                                    int64_t batch_size);

}  // namespace rg::oe
