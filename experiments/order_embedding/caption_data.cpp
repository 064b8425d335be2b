// Captions, features, the split, the synthetic task and the batches; see
// caption_data.h.
#include "rmsgrad/experiments/order_embedding/caption_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "rmsgrad/core/error.h"
#include "rmsgrad/experiments/common/npy.h"
#include "rmsgrad/experiments/common/text_file.h"

namespace rg::oe {

std::vector<std::string> caption_words(std::string_view caption) {
  std::vector<std::string> words;
  std::string word;
  for (char ch : caption) {
    const unsigned char c = static_cast<unsigned char>(ch);
    const bool in_word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
    if (in_word) {
      word += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : ch;
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

CaptionCorpus read_corpus(const std::string& features_path, const std::vector<std::string>& caption_paths,
                          int64_t captions_per_image) {
  check(!caption_paths.empty(), "order_embedding: --features {} needs caption files (--captions)", features_path);
  CaptionCorpus corpus;
  corpus.features = read_npy_matrix(features_path);
  const int64_t n = corpus.features.dim(0), d = corpus.features.dim(1);
  // A NaN or Inf feature would give NaN distances, recalls computed from them,
  // and a best checkpoint picked on them.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const float v = corpus.features.data()[i * d + j];
      check(std::isfinite(v), "order_embedding: --features {}: row {} (image {}) holds {} in column {}; every feature "
            "must be finite", features_path, i, i + 1, v, j);
    }
  std::vector<std::vector<std::string>> files;
  for (const std::string& path : caption_paths) files.push_back(read_lines(path));
  if (files.size() == 1) {
    check(captions_per_image > 0, "order_embedding: captions per image must be positive, got {}", captions_per_image);
    const int64_t lines = static_cast<int64_t>(files[0].size());
    // Compared by division first: n · K could overflow for a K from the command line.
    check(lines / captions_per_image == n && lines % captions_per_image == 0,
          "{}: {} lines, but the {} images of {} with {} captions each need {} (one file holds N·K lines grouped by "
          "image)",
          caption_paths[0], lines, n, features_path, captions_per_image,
          n > 0 && captions_per_image > std::numeric_limits<int64_t>::max() / n ? std::string("more than 2^63")
                                                                                : std::to_string(n * captions_per_image));
    corpus.captions_per_image = captions_per_image;
    corpus.captions = std::move(files[0]);
  } else {
    corpus.captions_per_image = static_cast<int64_t>(files.size());
    for (size_t k = 0; k < files.size(); ++k)
      check(static_cast<int64_t>(files[k].size()) == n,
            "{}: {} lines, but {} has {} images (with one caption file per caption index, each file has one line per "
            "image)",
            caption_paths[k], files[k].size(), features_path, n);
    corpus.captions.resize(static_cast<size_t>(n * corpus.captions_per_image));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < corpus.captions_per_image; ++k)
        corpus.captions[static_cast<size_t>(i * corpus.captions_per_image + k)] =
            std::move(files[static_cast<size_t>(k)][static_cast<size_t>(i)]);
  }
  for (size_t c = 0; c < corpus.captions.size(); ++c)
    if (caption_words(corpus.captions[c]).empty()) {
      const size_t k = static_cast<size_t>(corpus.captions_per_image);
      const bool one_file = caption_paths.size() == 1;
      throw Error(fmt::format("{}:{}: caption has no word", one_file ? caption_paths[0] : caption_paths[c % k],
                              one_file ? c + 1 : c / k + 1));
    }
  corpus.description =
      fmt::format("{} images ({}-d features from {}), {} captions each from {}", n, corpus.features.dim(1),
                  features_path, corpus.captions_per_image, fmt::join(caption_paths, ", "));
  return corpus;
}

CaptionCorpus synthetic_corpus(int64_t num_images, int64_t image_dim, int64_t captions_per_image, uint64_t seed) {
  static constexpr std::array<const char*, 24> kNouns = {
      "dog",   "cat",  "man", "woman", "boy",   "girl",   "car",  "bike",  "ball", "horse", "bird",  "tree",
      "house", "boat", "hat", "chair", "table", "guitar", "kite", "train", "bus",  "cow",   "sheep", "flower"};
  static constexpr std::array<const char*, 12> kColours = {"red",    "blue", "green",  "yellow", "black", "white",
                                                           "orange", "pink", "purple", "brown",  "gray",  "silver"};
  static constexpr std::array<const char*, 4> kOpenings = {"", "a photo of ", "there is ", "we see "};
  static constexpr std::array<const char*, 4> kJoins = {" and ", " next to ", " with ", " , "};
  check(num_images > 0 && image_dim > 0 && captions_per_image > 0,
        "synthetic corpus: images {}, dim {}, captions per image {} must all be positive", num_images, image_dim,
        captions_per_image);
  Generator gen(seed);
  const int64_t nouns = kNouns.size(), colours = kColours.size();
  Tensor noun_vectors = normal(Shape{nouns, image_dim}, 0.0f, 1.0f, gen);
  Tensor colour_vectors = normal(Shape{colours, image_dim}, 0.0f, 1.0f, gen);

  CaptionCorpus corpus;
  corpus.features = Tensor::zeros(Shape{num_images, image_dim});
  corpus.captions_per_image = captions_per_image;
  for (int64_t i = 0; i < num_images; ++i) {
    const int64_t count = 1 + gen.randint(3);
    std::vector<int64_t> noun_order(nouns);
    for (int64_t j = 0; j < nouns; ++j) noun_order[j] = j;
    shuffle(noun_order, gen);
    std::vector<std::pair<int64_t, int64_t>> objects;  // (noun, colour)
    float* image = corpus.features.data() + i * image_dim;
    for (int64_t o = 0; o < count; ++o) {
      const int64_t noun = noun_order[o], colour = gen.randint(colours);
      objects.emplace_back(noun, colour);
      const float* nv = noun_vectors.data() + noun * image_dim;
      const float* cv = colour_vectors.data() + colour * image_dim;
      for (int64_t d = 0; d < image_dim; ++d) image[d] += std::max(nv[d] + cv[d], 0.0f);
    }
    for (int64_t d = 0; d < image_dim; ++d) image[d] += 0.5f * std::fabs(gen.normal());
    for (int64_t k = 0; k < captions_per_image; ++k) {
      shuffle(objects, gen);
      std::string caption = kOpenings[gen.randint(kOpenings.size())];
      for (size_t o = 0; o < objects.size(); ++o) {
        if (o > 0) caption += kJoins[gen.randint(kJoins.size())];
        caption += fmt::format("a {} {}", kColours[objects[o].second], kNouns[objects[o].first]);
      }
      corpus.captions.push_back(std::move(caption));
    }
  }
  corpus.description =
      fmt::format("synthetic: {} images of 1–3 coloured objects ({}-d features), {} captions each (seed {})",
                  num_images, image_dim, captions_per_image, seed);
  return corpus;
}

namespace {

enum class Part { Train, Valid, Test };
Part part_of(int64_t image) { return image % 10 == 8 ? Part::Valid : image % 10 == 9 ? Part::Test : Part::Train; }

}  // namespace

Splits split_corpus(const CaptionCorpus& corpus, int64_t min_count) {
  const int64_t n = corpus.num_images(), k = corpus.captions_per_image, d = corpus.features.dim(1);
  std::vector<std::vector<std::string>> words(corpus.captions.size());
  for (size_t c = 0; c < words.size(); ++c) words[c] = caption_words(corpus.captions[c]);
  TokenCounts counts;
  for (size_t c = 0; c < words.size(); ++c)
    if (part_of(static_cast<int64_t>(c) / k) == Part::Train)
      for (const std::string& w : words[c]) ++counts[w];

  Splits splits;
  splits.vocab = Vocab::from_counts(counts, min_count);
  std::array<RetrievalSet*, 3> sets = {&splits.train, &splits.valid, &splits.test};
  std::array<int64_t, 3> sizes = {0, 0, 0};
  for (int64_t i = 0; i < n; ++i) ++sizes[static_cast<size_t>(part_of(i))];
  for (size_t s = 0; s < 3; ++s) {
    sets[s]->features = Tensor::empty(Shape{sizes[s], d});
    sets[s]->captions_per_image = k;
    sizes[s] = 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    RetrievalSet& set = *sets[static_cast<size_t>(part_of(i))];
    const int64_t row = sizes[static_cast<size_t>(part_of(i))]++;
    std::copy_n(corpus.features.data() + i * d, d, set.features.data() + row * d);
    for (int64_t j = 0; j < k; ++j) set.captions.push_back(splits.vocab.encode(words[static_cast<size_t>(i * k + j)]));
  }
  splits.description = fmt::format(
      "split by image (i mod 10: 8 valid, 9 test): train {}, valid {}, test {} images; "
      "vocabulary {} words (min count {})",
      splits.train.num_images(), splits.valid.num_images(), splits.test.num_images(), splits.vocab.size(), min_count);
  return splits;
}

EpochPlanner distinct_image_batches(std::vector<int64_t> caption_lengths, int64_t k, int64_t batch_size) {
  check(k > 0 && static_cast<int64_t>(caption_lengths.size()) % k == 0,
        "distinct_image_batches: {} captions do not make whole images of {} captions", caption_lengths.size(), k);
  check(batch_size >= 2, "distinct_image_batches: a batch needs at least 2 pairs (a pair has no negatives), got {}",
        batch_size);
  return [lengths = std::move(caption_lengths), k, batch_size](Generator& gen) {
    const int64_t n = static_cast<int64_t>(lengths.size()) / k;
    // Each image's captions in its own random order: pass p uses order[i][p].
    std::vector<std::vector<int64_t>> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < k; ++j) order[i].push_back(i * k + j);
      shuffle(order[i], gen);
    }
    EpochPlan plan;
    const int64_t chunk = 20 * batch_size;
    for (int64_t pass = 0; pass < k; ++pass) {
      std::vector<int64_t> captions(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) captions[i] = order[i][pass];
      shuffle(captions, gen);
      EpochPlan pass_batches;
      for (int64_t begin = 0; begin < n; begin += chunk) {
        const auto first = captions.begin() + begin, last = captions.begin() + std::min(n, begin + chunk);
        std::stable_sort(first, last, [&](int64_t a, int64_t b) { return lengths[a] < lengths[b]; });
        for (auto it = first; it < last; it += std::min<int64_t>(batch_size, last - it))
          if (last - it >= 2) pass_batches.emplace_back(it, it + std::min<int64_t>(batch_size, last - it));
      }
      shuffle(pass_batches, gen);
      plan.insert(plan.end(), pass_batches.begin(), pass_batches.end());
    }
    return plan;
  };
}

}  // namespace rg::oe
