// The LLaMA-style language model; the architecture, its names and its choices
// are in llama.h.
#include "rmsgrad/models/llama.h"

#include <cmath>

#include "rmsgrad/core/error.h"

namespace rg {

namespace {

// A block (causal, as every DecoderOnlyBlock): pre-norm, self-attention with
// rotary Q and K, SwiGLU, no biases, no dropout.
TransformerLayerOptions block_options(const LlamaOptions& o) {
  TransformerLayerOptions block;
  block.model_size = o.model_size;
  block.ffn_size = o.ffn_size;
  block.heads = o.heads;
  block.norm = o.norm;
  block.norm_position = NormPosition::Pre;
  block.dropout = 0.0f;
  block.attention_dropout = 0.0f;
  block.init = WeightInit{.kind = WeightInitKind::Normal, .stddev = o.init_stddev};
  block.feed_forward = FeedForwardKind::SwiGLU;
  block.bias = false;
  block.rotary_base = o.rotary_base;
  return block;
}

}  // namespace

Llama::Llama(const LlamaOptions& options, Generator& init_gen) : options_(options) {
  check(options.vocab > 0 && options.layers > 0, "Llama: needs a vocabulary and at least one layer, got {} and {}",
        options.vocab, options.layers);
  check(options.init_stddev > 0.0f, "Llama: init_stddev must be positive, got {}", options.init_stddev);
  check(options.context == 0 || options.context >= 2, "Llama: context must be 0 (no limit) or at least 2, got {}",
        options.context);
  const int64_t d = options.model_size;
  // The blocks check d, h, the FFN size, the norm and the rotary base.
  const TransformerLayerOptions block = block_options(options);
  register_module("embed_tokens", embed_tokens, std::make_shared<Embedding>(options.vocab, d, init_gen, options.init_stddev));
  register_module("layers", layers, std::make_shared<ModuleList<DecoderOnlyBlock>>());
  for (int64_t i = 0; i < options.layers; ++i)
    layers->push_back(std::make_shared<DecoderOnlyBlock>(block, init_gen, noise_));
  register_module("norm", norm, make_norm(options.norm, d));
  if (!options.tie_embeddings)
    register_module("lm_head", lm_head, std::make_shared<Linear>(d, options.vocab, init_gen,
                                                                  LinearOptions{.bias = false, .init = block.init}));
}

Var Llama::output_logits(const Var& x) {
  Var y = norm->forward(x);
  return lm_head ? lm_head->forward(y) : linear(y, embed_tokens->weight, Var());  // y Eᵀ when tied
}

Var Llama::forward(const Indices& ids) {
  check(ids.shape.rank() == 2 && ids.shape[1] > 0, "Llama: ids {} must be [B, T] with T ≥ 1", ids.shape);
  Var x = embed_tokens->forward(ids);
  for (auto& layer : *layers) x = layer->forward(x);
  return output_logits(x);
}

Var Llama::forward(const Indices& ids, LlamaCache& cache) {
  check(ids.shape.rank() == 2 && ids.shape[1] > 0, "Llama: ids {} must be [B, t] with t ≥ 1", ids.shape);
  if (cache.layers.empty()) cache.layers.resize(layers->size());
  check(cache.layers.size() == layers->size(), "Llama: a cache of {} layers for a model of {}", cache.layers.size(),
        layers->size());
  Var x = embed_tokens->forward(ids);
  for (size_t i = 0; i < layers->size(); ++i) x = (*layers)[i].step(x, cache.layers[i]);
  return output_logits(x);
}

namespace {

void check_sampling(float temperature, int64_t top_k, int64_t vocab, const char* who) {
  check(std::isfinite(temperature) && temperature >= 0.0f, "{}: temperature must be ≥ 0 (0: greedy), got {}", who,
        temperature);
  check(top_k >= 0 && top_k <= vocab, "{}: top_k must be in [0, {}] (0: every token), got {}", who, vocab, top_k);
}

}  // namespace

int32_t sample_token(const Tensor& logits, float temperature, int64_t top_k, Generator& gen) {
  check(logits.defined() && logits.rank() == 1 && logits.numel() > 0, "sample_token: logits {} must be [V]",
        shape_of(logits));
  const int64_t vocab = logits.numel();
  check_sampling(temperature, top_k, vocab, "sample_token");
  NoGradGuard no_grad;
  Var z = constant(logits.reshape(Shape{1, vocab}));
  if (temperature == 0.0f) return argmax(z, 1).values[0];
  z = z * (1.0f / temperature);
  if (top_k == 0 || top_k == vocab) return multinomial(softmax(z, 1).value(), 1, false, gen).values[0];
  TopK best = topk(z, top_k, 1);  // [1, k], largest first
  const int32_t pick = multinomial(softmax(best.values, 1).value(), 1, false, gen).values[0];
  return best.indices.values[static_cast<size_t>(pick)];
}

std::vector<int32_t> Llama::generate(const std::vector<int32_t>& prompt, int64_t count, float temperature,
                                     int64_t top_k, Generator& gen) {
  check(!prompt.empty(), "Llama::generate: the prompt is empty (give it at least a start token)");
  check(count >= 0, "Llama::generate: count must be ≥ 0, got {}", count);
  check_sampling(temperature, top_k, options_.vocab, "Llama::generate");
  NoGradGuard no_grad;
  LlamaCache cache;
  std::vector<int32_t> fed;  // every token so far
  Tensor next;  // logits [V] for the position after the last token fed
  auto feed = [&](int32_t id) {
    const int64_t window = options_.context;
    if (window > 0 && cache.length() == window) {  // start again from the last window − 1 tokens, as one block
      cache = LlamaCache{};
      forward(Indices(Shape{1, window - 1}, std::vector<int32_t>(fed.end() - (window - 1), fed.end())), cache);
    }
    fed.push_back(id);
    next = forward(Indices(Shape{1, 1}, {id}), cache).value().reshape(Shape{options_.vocab});
  };
  for (int32_t id : prompt) feed(id);
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    out.push_back(sample_token(next, temperature, top_k, gen));
    if (i + 1 < count) feed(out.back());
  }
  return out;
}

}  // namespace rg
