// The Transformer's layers; the equations are in transformer.h.
#include "rmsgrad/layers/transformer.h"

#include <cmath>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/error.h"

namespace rg {

NormPosition parse_norm_position(std::string_view name) {
  if (name == "post") return NormPosition::Post;
  if (name == "pre") return NormPosition::Pre;
  throw Error(fmt::format("unknown norm position '{}' (expected post or pre)", name));
}

std::string norm_position_name(NormPosition position) { return position == NormPosition::Post ? "post" : "pre"; }

FeedForwardKind parse_feed_forward(std::string_view name) {
  if (name == "relu") return FeedForwardKind::ReLU;
  if (name == "gelu") return FeedForwardKind::GELU;
  if (name == "swiglu") return FeedForwardKind::SwiGLU;
  throw Error(fmt::format("unknown feed-forward '{}' (expected relu, gelu or swiglu)", name));
}

std::string feed_forward_name(FeedForwardKind kind) {
  switch (kind) {
    case FeedForwardKind::ReLU: return "relu";
    case FeedForwardKind::GELU: return "gelu";
    case FeedForwardKind::SwiGLU: return "swiglu";
  }
  return "?";
}

namespace {

void check_options(const TransformerLayerOptions& o, const char* who) {
  check(o.model_size > 0 && o.ffn_size > 0 && o.heads > 0 && o.model_size % o.heads == 0,
        "{}: model size {} must be a positive multiple of heads {}, and the FFN size {} positive", who, o.model_size,
        o.heads, o.ffn_size);
  check(o.dropout >= 0.0f && o.dropout < 1.0f && o.attention_dropout >= 0.0f && o.attention_dropout < 1.0f,
        "{}: dropout {} and attention dropout {} must be in [0, 1)", who, o.dropout, o.attention_dropout);
  check(o.norm.kind != NormKind::BatchNorm && o.norm.kind != NormKind::WeightNorm,
        "{}: normalization {} is not available in the Transformer (none, layernorm, rmsnorm, prmsnorm, l2norm)", who,
        norm_name(o.norm.kind));
}

// The self-attention rotates by position when asked; a cross-attention never
// does (a target position and a source position are not on one axis).
std::shared_ptr<MultiHeadAttention> make_attention(const TransformerLayerOptions& o, Generator& init_gen,
                                                   Generator& noise_gen, bool self_attention) {
  const MultiHeadAttentionOptions options{.init = o.init,
                                          .dropout = o.attention_dropout,
                                          .bias = o.bias,
                                          .rotary_base = self_attention ? o.rotary_base : 0.0f};
  return std::make_shared<MultiHeadAttention>(o.model_size, o.heads, init_gen, options, &noise_gen);
}

// relu, gelu: W₂ dropout(act(W₁x + b₁)) + b₂;
// swiglu:     W₂ dropout(silu(W₁x + b₁) ⊙ (W₃x + b₃)) + b₂ (linear3 is W₃).
Var feed_forward(FeedForwardKind kind, Linear& linear1, Linear& linear2, Linear* linear3, Dropout& dropout,
                 const Var& x) {
  Var hidden = linear1.forward(x);
  switch (kind) {
    case FeedForwardKind::ReLU: return linear2.forward(dropout.forward_relu(hidden));  // one op, one pass
    case FeedForwardKind::GELU: hidden = gelu(hidden); break;
    case FeedForwardKind::SwiGLU: hidden = swiglu(hidden, linear3->forward(x)); break;
  }
  return linear2.forward(dropout.forward(hidden));
}

// One sublayer with its residual and norm: post-norm norm(x + drop(f(x))),
// pre-norm x + drop(f(norm(x))).
template <typename Sublayer>
Var residual(NormPosition position, Norm& norm, Dropout& dropout, const Var& x, Sublayer&& sublayer) {
  if (position == NormPosition::Post) return norm.forward(x + dropout.forward(sublayer(x)));
  return x + dropout.forward(sublayer(norm.forward(x)));
}

}  // namespace

SelfAttentionLayer::SelfAttentionLayer(const TransformerLayerOptions& options, bool causal, const char* name,
                                       Generator& init_gen, Generator& noise_gen)
    : options_(options), causal_(causal), name_(name) {
  check_options(options, name);
  const LinearOptions linear{.bias = options.bias, .init = options.init};
  register_module("self_attn", self_attn, make_attention(options, init_gen, noise_gen, true));
  register_module("linear1", linear1, std::make_shared<Linear>(options.model_size, options.ffn_size, init_gen, linear));
  register_module("linear2", linear2, std::make_shared<Linear>(options.ffn_size, options.model_size, init_gen, linear));
  if (options.feed_forward == FeedForwardKind::SwiGLU)
    register_module("linear3", linear3, std::make_shared<Linear>(options.model_size, options.ffn_size, init_gen, linear));
  register_module("norm1", norm1, make_norm(options.norm, options.model_size));
  register_module("norm2", norm2, make_norm(options.norm, options.model_size));
  register_module("dropout", dropout, std::make_shared<Dropout>(options.dropout, noise_gen));
}

Var SelfAttentionLayer::feed_forward_sublayer(const Var& h) {
  return residual(options_.norm_position, *norm2, *dropout, h, [&](const Var& in) {
    return feed_forward(options_.feed_forward, *linear1, *linear2, linear3.get(), *dropout, in);
  });
}

Var SelfAttentionLayer::forward(const Var& x, const Tensor& key_mask) {
  check(x.defined() && x.rank() == 3 && x.dim(2) == options_.model_size, "{}: input {} must be [B, S, {}]", name_,
        shape_of(x), options_.model_size);
  Var h = residual(options_.norm_position, *norm1, *dropout, x, [&](const Var& in) {
    return self_attn->forward(in, in, in, key_mask, causal_).context;
  });
  return feed_forward_sublayer(h);
}

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerLayerOptions& options, Generator& init_gen,
                                                 Generator& noise_gen)
    : SelfAttentionLayer(options, /*causal=*/false, "TransformerEncoderLayer", init_gen, noise_gen) {}

DecoderOnlyBlock::DecoderOnlyBlock(const TransformerLayerOptions& options, Generator& init_gen, Generator& noise_gen)
    : SelfAttentionLayer(options, /*causal=*/true, "DecoderOnlyBlock", init_gen, noise_gen) {}

Var DecoderOnlyBlock::step(const Var& x, KeyValues& cache) {
  check(x.defined() && x.rank() == 3 && x.dim(2) == options_.model_size,
        "DecoderOnlyBlock: a decoding step's input {} must be [B, t, {}]", shape_of(x), options_.model_size);
  const int64_t past = cache.length(), rows = past > 0 ? cache.keys.dim(0) : x.dim(0);
  check(past == 0 || (x.dim(1) == 1 && x.dim(0) == rows),
        "DecoderOnlyBlock: with {} positions cached, a step's input {} must be [{}, 1, {}]", past, x.shape(), rows,
        options_.model_size);
  // The new positions' keys and values join the cache, then attend over it:
  // a first block causally among its own positions, as forward() does; a
  // later single position over everything before it and itself, no mask.
  Var h = residual(options_.norm_position, *norm1, *dropout, x, [&](const Var& in) {
    cache = cache.append(self_attn->project(in, in, past));
    return self_attn->attend(in, cache, {}, /*causal=*/past == 0, past).context;
  });
  return feed_forward_sublayer(h);
}

DecoderLayerCache DecoderLayerCache::select_rows(const std::vector<int32_t>& rows) const {
  DecoderLayerCache out;
  if (self.length() > 0) out.self = self.select_rows(rows);
  out.cross = cross.select_rows(rows);
  if (memory_mask.defined()) out.memory_mask = index_select(constant(memory_mask), 0, rows).value();
  return out;
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerLayerOptions& options, Generator& init_gen,
                                                 Generator& noise_gen)
    : options_(options) {
  check_options(options, "TransformerDecoderLayer");
  const LinearOptions linear{.bias = options.bias, .init = options.init};
  register_module("self_attn", self_attn, make_attention(options, init_gen, noise_gen, true));
  register_module("cross_attn", cross_attn, make_attention(options, init_gen, noise_gen, false));
  register_module("linear1", linear1, std::make_shared<Linear>(options.model_size, options.ffn_size, init_gen, linear));
  register_module("linear2", linear2, std::make_shared<Linear>(options.ffn_size, options.model_size, init_gen, linear));
  if (options.feed_forward == FeedForwardKind::SwiGLU)
    register_module("linear3", linear3, std::make_shared<Linear>(options.model_size, options.ffn_size, init_gen, linear));
  register_module("norm1", norm1, make_norm(options.norm, options.model_size));
  register_module("norm2", norm2, make_norm(options.norm, options.model_size));
  register_module("norm3", norm3, make_norm(options.norm, options.model_size));
  register_module("dropout", dropout, std::make_shared<Dropout>(options.dropout, noise_gen));
}

template <typename SelfAttention>
Var TransformerDecoderLayer::run(const Var& x, SelfAttention&& self_attention, const KeyValues& cross,
                                 const Tensor& memory_mask) {
  const NormPosition at = options_.norm_position;
  Var h = residual(at, *norm1, *dropout, x, self_attention);
  h = residual(at, *norm2, *dropout, h,
               [&](const Var& in) { return cross_attn->attend(in, cross, memory_mask).context; });
  return residual(at, *norm3, *dropout, h, [&](const Var& in) {
    return feed_forward(options_.feed_forward, *linear1, *linear2, linear3.get(), *dropout, in);
  });
}

Var TransformerDecoderLayer::forward(const Var& x, const Var& memory, const Tensor& target_mask,
                                     const Tensor& memory_mask) {
  check(x.defined() && x.rank() == 3 && x.dim(2) == options_.model_size,
        "TransformerDecoderLayer: input {} must be [B, T, {}]", shape_of(x),
        options_.model_size);
  check(memory.defined() && memory.rank() == 3 && memory.dim(0) == x.dim(0) && memory.dim(2) == options_.model_size,
        "TransformerDecoderLayer: memory {} must be [{}, S, {}]", shape_of(memory),
        x.dim(0), options_.model_size);
  auto causal_self_attention = [&](const Var& in) {
    return self_attn->forward(in, in, in, target_mask, /*causal=*/true).context;
  };
  return run(x, causal_self_attention, cross_attn->project(memory, memory), memory_mask);
}

DecoderLayerCache TransformerDecoderLayer::start(const Var& memory, const Tensor& memory_mask) {
  check(memory.defined() && memory.rank() == 3 && memory.dim(2) == options_.model_size,
        "TransformerDecoderLayer: memory {} must be [B, S, {}]", shape_of(memory),
        options_.model_size);
  DecoderLayerCache cache;
  cache.cross = cross_attn->project(memory, memory);
  cache.memory_mask = memory_mask;
  return cache;
}

Var TransformerDecoderLayer::step(const Var& x, DecoderLayerCache& cache) {
  check(cache.cross.length() > 0, "TransformerDecoderLayer: step() needs a cache from start(memory)");
  const int64_t rows = cache.cross.keys.dim(0);
  check(x.defined() && x.rank() == 3 && x.dim(0) == rows && x.dim(1) == 1 && x.dim(2) == options_.model_size,
        "TransformerDecoderLayer: a decoding step's input {} must be [{}, 1, {}]",
        shape_of(x), rows, options_.model_size);
  // The new position attends to every cached position and to itself: its own
  // keys and values join the cache first. No causal mask is needed.
  const int64_t past = cache.self.length();
  auto cached_self_attention = [&](const Var& in) {
    cache.self = cache.self.append(self_attn->project(in, in, past));
    return self_attn->attend(in, cache.self, {}, false, past).context;
  };
  return run(x, cached_self_attention, cache.cross, cache.memory_mask);
}

Tensor sinusoidal_positions(int64_t positions, int64_t size, int64_t first) {
  check(positions >= 0 && size > 0 && size % 2 == 0 && first >= 0,
        "sinusoidal_positions: need positions ≥ 0, an even size > 0 and first ≥ 0, got {}, {}, {}", positions, size,
        first);
  Tensor table = Tensor::empty(Shape{positions, size});
  float* out = table.data();
  for (int64_t t = 0; t < positions; ++t)
    for (int64_t i = 0; i < size / 2; ++i) {
      // 1 / 10000^(2i/size), in double so that long positions keep their precision.
      const double angle = static_cast<double>(first + t) *
                           std::exp(-std::log(10000.0) * static_cast<double>(2 * i) / static_cast<double>(size));
      out[t * size + 2 * i] = static_cast<float>(std::sin(angle));
      out[t * size + 2 * i + 1] = static_cast<float>(std::cos(angle));
    }
  return table;
}

}  // namespace rg
