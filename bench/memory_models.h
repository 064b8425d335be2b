#pragma once
// The four paper models as bench_memory and bench_long_run train them: the
// same constructors, sizes and batches as the timing benches (bench/model_steps,
// bench/*_torch.py), with the batch rebuildable at other lengths so a long run
// can vary its shapes the way real batches do.
//
//   MemoryModel m = make_memory_model("rnnsearch", MemorySizes::bench("rnnsearch"), "rmsnorm");
//   m.step();                 // forward, loss, backward, clip, Adam; clears the tape
//   m.reshape(80, 31, 35);    // a batch of another shape (rnnsearch and reader)
//
// Every allocation is tagged (core/allocation_tags.h) as "parameters",
// "optimizer state" or "inputs" outside the forward and backward passes.
// The real-data sizes are those of the README's commands: Multi30k RNNSearch
// (batch 80, 8,000 subwords, sentences of up to 39 words: the longest batch
// is about 50 × 50 subwords; "worst" is the longest the driver admits, pairs
// of up to 80 subwords), the attentive reader on bAbI task 1 (batch 32, 64
// units, stories of up to ~70 tokens, a ~40-word vocabulary; the queries as
// in the benchmark); ConvPool-CNN-C and the order-embedding model run at the
// same sizes in the README as in their benchmarks.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rmsgrad.h"
#include "models/attentive_reader.h"
#include "models/convpool_cnn.h"
#include "models/order_embedding.h"
#include "models/rnnsearch.h"

#include "core/allocation_tags.h"

namespace rg::bench {

struct MemorySizes {
  int64_t batch = 0, src_len = 0, tgt_len = 0, vocab = 0, embed = 0, hidden = 0;
  double width = 0.5;
  static MemorySizes bench(const std::string& model) {
    if (model == "rnnsearch") return {80, 22, 22, 8000, 256, 256};
    if (model == "reader") return {64, 300, 20, 10000, 240, 240};  // src_len: document, tgt_len: query
    if (model == "order_embedding") return {128, 17, 17, 3000, 300, 1024};
    return {100, 0, 0, 0, 0, 0, 0.5};  // convpool
  }
  static MemorySizes real(const std::string& model) {
    if (model == "rnnsearch") return {80, 50, 50, 8000, 256, 256};
    if (model == "reader") return {32, 70, 20, 40, 64, 64};
    return bench(model);
  }
  // RNNSearch's longest batch the driver admits (pairs of up to 80 subwords).
  static MemorySizes worst(const std::string& model) {
    if (model == "rnnsearch") return {80, 80, 80, 8000, 256, 256};
    return real(model);
  }
  // RNNSearch's longest Multi30k batch: the README's SentencePiece model cuts
  // the longest German sentence into 53 subwords and the longest English one
  // into 49 (with </s>).
  static MemorySizes longest(const std::string& model) {
    if (model == "rnnsearch") return {80, 53, 49, 8000, 256, 256};
    return real(model);
  }
  static MemorySizes named(const std::string& sizes, const std::string& model) {
    if (sizes == "longest") return longest(model);
    return sizes == "worst" ? worst(model) : sizes == "real" ? real(model) : bench(model);
  }
};

struct MemoryModel {
  std::function<void()> step;
  std::function<void(int64_t batch, int64_t src_len, int64_t tgt_len)> reshape;  // text models only
  int64_t parameters = 0;
};

// Sentence b of a batch: lengths low + (stride·b) mod (high − low + 1), ids
// uniform in [4, vocab), time-major [T, B] with its mask.
struct Tokens {
  Indices ids;
  Tensor mask;
};
inline Tokens random_tokens(int64_t batch, int64_t low, int64_t high, int64_t stride, int64_t vocab, Generator& gen) {
  ScopedAllocationTag tag("inputs");
  low = std::max<int64_t>(1, std::min(low, high));
  std::vector<int64_t> lengths(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) lengths[static_cast<size_t>(b)] = low + (stride * b) % (high - low + 1);
  const int64_t steps = *std::max_element(lengths.begin(), lengths.end());
  std::vector<int32_t> ids(static_cast<size_t>(steps * batch), 0);
  Tensor mask = Tensor::zeros(Shape{steps, batch});
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = lengths[static_cast<size_t>(b)];
    for (int64_t t = 0; t < length; ++t) {
      ids[static_cast<size_t>(t * batch + b)] = t + 1 == length ? 3 : 4 + static_cast<int32_t>(gen.randint(vocab - 4));
      mask.data()[t * batch + b] = 1.0f;
    }
  }
  return {Indices(Shape{steps, batch}, std::move(ids)), mask};
}

// Adam's moments are allocated on its first step: run that step's update
// under the "optimizer state" tag.
template <class Clip>
void update(Adam& adam, Clip clip) {
  ScopedAllocationTag tag("optimizer state");
  clip();
  adam.step();
}

inline MemoryModel make_rnnsearch(const MemorySizes& z, const std::string& norm) {
  struct State {
    Generator gen{0}, noise{1};
    std::unique_ptr<RNNSearch> model;
    std::unique_ptr<Adam> adam;
    Tokens source, target;
  };
  auto s = std::make_shared<State>();
  {
    ScopedAllocationTag tag("parameters");
    RNNSearchOptions o;
    o.source_vocab = o.target_vocab = z.vocab;
    o.embed = z.embed;
    o.hidden = z.hidden;
    o.norm.kind = parse_norm_kind(norm);
    o.dropout = 0.2f;
    s->model = std::make_unique<RNNSearch>(o, s->gen, s->noise);
    s->model->train();
    s->adam = std::make_unique<Adam>(s->model->named_parameters(), AdamOptions{.lr = 1e-4});
  }
  MemoryModel m;
  m.reshape = [s, vocab = z.vocab](int64_t batch, int64_t src_len, int64_t tgt_len) {
    s->source = random_tokens(batch, src_len - 9, src_len, 7, vocab, s->gen);
    s->target = random_tokens(batch, tgt_len - 9, tgt_len, 3, vocab, s->gen);
  };
  m.reshape(z.batch, z.src_len, z.tgt_len);
  m.step = [s] {
    Var loss = s->model->loss(s->source.ids, s->source.mask, s->target.ids, s->target.mask);
    s->adam->zero_grad();
    loss.backward();
    update(*s->adam, [&] { clip_grad_norm(s->model->named_parameters(), 1.0); });
    tape().clear();
  };
  m.parameters = s->model->parameter_count();
  return m;
}

inline MemoryModel make_reader(const MemorySizes& z, const std::string& norm) {
  struct State {
    Generator gen{0}, noise{1};
    std::unique_ptr<AttentiveReader> model;
    std::unique_ptr<Adam> adam;
    Tokens document, query;
    Indices candidates, answers;
    Tensor padding;
  };
  auto s = std::make_shared<State>();
  {
    ScopedAllocationTag tag("parameters");
    AttentiveReaderOptions o;
    o.vocab_size = z.vocab;
    o.embed_dim = z.embed;
    o.hidden = z.hidden;
    o.norm.kind = parse_norm_kind(norm);
    o.dropout = 0.5f;
    s->model = std::make_unique<AttentiveReader>(o, s->gen, s->noise);
    s->model->train();
    s->adam = std::make_unique<Adam>(s->model->named_parameters(), AdamOptions{.lr = 8e-5});
  }
  MemoryModel m;
  m.reshape = [s, vocab = z.vocab](int64_t batch, int64_t doc_len, int64_t query_len) {
    constexpr int64_t k = 10;
    s->document = random_tokens(batch, (5 * doc_len + 5) / 6, doc_len, 7, vocab, s->gen);
    s->query = random_tokens(batch, std::max<int64_t>(1, query_len - 8), query_len, 5, vocab, s->gen);
    std::vector<int32_t> candidates(static_cast<size_t>(batch * k)), answers;
    for (auto& id : candidates) id = 4 + static_cast<int32_t>(s->gen.randint(vocab - 4));
    for (int64_t i = 0; i < batch; ++i) answers.push_back(static_cast<int32_t>(i % k));
    s->candidates = Indices(Shape{batch, k}, candidates);
    s->answers = Indices(Shape{batch}, answers);
    ScopedAllocationTag tag("inputs");
    s->padding = Tensor::zeros(Shape{batch, k});
  };
  m.reshape(z.batch, z.src_len, z.tgt_len);
  m.step = [s] {
    const ReaderInputs in{s->document.ids, s->document.mask, s->query.ids, s->query.mask, s->candidates, s->padding};
    Var loss = s->model->loss(in, s->answers);
    s->adam->zero_grad();
    loss.backward();
    update(*s->adam, [&] { clip_grad_norm(s->model->named_parameters(), 10.0); });
    tape().clear();
  };
  m.parameters = s->model->parameter_count();
  return m;
}

inline MemoryModel make_order_embedding(const MemorySizes& z, const std::string& norm) {
  struct State {
    Generator gen{0};
    std::unique_ptr<OrderEmbeddingModel> model;
    std::unique_ptr<Adam> adam;
    Tokens words;
    Tensor images;
  };
  auto s = std::make_shared<State>();
  {
    ScopedAllocationTag tag("parameters");
    OrderEmbeddingOptions o;
    o.vocab_size = z.vocab;
    o.word_dim = z.embed;
    o.embed_dim = z.hidden;
    o.image_dim = 2048;
    o.norm.kind = parse_norm_kind(norm);
    s->model = std::make_unique<OrderEmbeddingModel>(o, s->gen);
    s->adam = std::make_unique<Adam>(s->model->named_parameters(), AdamOptions{.lr = 1e-3});
  }
  s->words = random_tokens(z.batch, 6, z.src_len, 5, z.vocab, s->gen);  // 6–17 words
  {
    ScopedAllocationTag tag("inputs");
    s->images = normal(Shape{z.batch, 2048}, 0.0f, 1.0f, s->gen);
  }
  MemoryModel m;
  m.step = [s] {
    Var loss = s->model->loss(s->words.ids, s->words.mask, constant(s->images));
    s->adam->zero_grad();
    loss.backward();
    update(*s->adam, [&] { clip_grad_norm_per_parameter(s->model->named_parameters(), 2.0); });
    tape().clear();
  };
  m.parameters = s->model->parameter_count();
  return m;
}

inline MemoryModel make_convpool(const MemorySizes& z, const std::string& norm) {
  struct State {
    Generator init{1}, noise{2}, data{3};
    std::unique_ptr<ConvPoolCnnC> model;
    std::unique_ptr<Adam> adam;
    Tensor images;
    std::vector<int32_t> labels;
  };
  auto s = std::make_shared<State>();
  {
    ScopedAllocationTag tag("parameters");
    ConvPoolCnnOptions o;
    o.norm.kind = parse_norm_kind(norm);
    o.norm.p = 0.125f;
    o.norm.eps = 1e-6f;
    o.width = z.width;
    s->model = std::make_unique<ConvPoolCnnC>(o, s->init, s->noise);
    s->adam = std::make_unique<Adam>(s->model->named_parameters(), AdamOptions{.lr = 3e-3});
  }
  {
    ScopedAllocationTag tag("inputs");
    s->images = normal(Shape{z.batch, 3, 32, 32}, 0.0f, 1.0f, s->data);
  }
  for (int64_t i = 0; i < z.batch; ++i) s->labels.push_back(static_cast<int32_t>(s->data.randint(10)));
  MemoryModel m;
  m.step = [s] {
    Var loss = cross_entropy((*s->model)(constant(s->images)), Indices(s->labels));
    s->adam->zero_grad();
    loss.backward();
    update(*s->adam, [] {});
    tape().clear();
  };
  m.parameters = s->model->parameter_count();
  return m;
}

inline MemoryModel make_memory_model(const std::string& model, const MemorySizes& z, const std::string& norm) {
  if (model == "rnnsearch") return make_rnnsearch(z, norm);
  if (model == "reader") return make_reader(z, norm);
  if (model == "order_embedding") return make_order_embedding(z, norm);
  check(model == "convpool", "bench: unknown model '{}' (rnnsearch, reader, order_embedding, convpool)", model);
  return make_convpool(z, norm);
}

}  // namespace rg::bench
