// A decoder-only character Transformer of one's own (GPT-style), written
// from the library's layers: an embedding and a learnt position table,
// pre-norm DecoderOnlyBlocks with RMSNorm and a GELU feed-forward, a
// final norm and an output layer; trained on a text, then sampled one
// character at a time through each layer's key/value cache.
//
//   char_decoder TEXT_FILE [STEPS, default 300]
//
// Prints the loss every 50 steps and a sample, and exits non-zero unless the
// loss fell below 75% of its first value.
#include <rmsgrad/rmsgrad.h>

#include <cstdio>
#include <exception>
#include <string>

#include "char_text.h"

namespace {

constexpr int64_t kContext = 64, kBatch = 16, kWidth = 64;

class CharDecoder : public rg::Module {
 public:
  explicit CharDecoder(int64_t vocab) : noise_(1) {
    register_module("embedding", embedding, std::make_shared<rg::Embedding>(vocab, kWidth));
    positions = register_parameter("positions", rg::normal(rg::Shape{kContext, kWidth}, 0.0f, 0.02f, rg::default_generator()));
    const rg::TransformerLayerOptions block{.model_size = kWidth, .ffn_size = 4 * kWidth, .heads = 4,
                                            .norm = {.kind = rg::NormKind::RMSNorm},
                                            .norm_position = rg::NormPosition::Pre, .dropout = 0.0f,
                                            .feed_forward = rg::FeedForwardKind::GELU};
    register_module("blocks", blocks, std::make_shared<rg::ModuleList<rg::DecoderOnlyBlock>>());
    for (int i = 0; i < 2; ++i) blocks->push_back(std::make_shared<rg::DecoderOnlyBlock>(block, rg::default_generator(), noise_));
    register_module("norm", norm, rg::make_norm({.kind = rg::NormKind::RMSNorm}, kWidth));
    register_module("output", output, std::make_shared<rg::Linear>(kWidth, vocab));
  }

  // ids [B, T] at positions first, …, first + T − 1 → logits [B, T, V]. With
  // caches, the layers keep each position's keys and values for the next call.
  rg::Var forward(const rg::Indices& ids, int64_t first = 0, std::vector<rg::KeyValues>* caches = nullptr) {
    const int64_t t = ids.shape[1];
    rg::Var x = embedding->forward(ids) + rg::slice(positions, 0, first, first + t);
    for (size_t i = 0; i < blocks->size(); ++i)
      x = caches ? (*blocks)[i].step(x, (*caches)[i]) : (*blocks)[i].forward(x);
    return output->forward(norm->forward(x));
  }

  std::shared_ptr<rg::Embedding> embedding;
  rg::Var positions;
  std::shared_ptr<rg::ModuleList<rg::DecoderOnlyBlock>> blocks;
  std::shared_ptr<rg::Norm> norm;
  std::shared_ptr<rg::Linear> output;

 private:
  rg::Generator noise_;  // the layers' dropout generator (p = 0)
};

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: char_decoder TEXT_FILE [STEPS]\n");
    return 2;
  }
  const CharText chars = read_char_text(argv[1], 4 * (kContext + 1));
  const std::string& text = chars.text;
  const std::string& alphabet = chars.alphabet;
  const int64_t steps = argc > 2 ? std::stoll(argv[2]) : 300;

  rg::manual_seed(11);
  CharDecoder model(static_cast<int64_t>(alphabet.size()));
  rg::Adam adam(model.named_parameters(), {.lr = 3e-3});
  rg::Generator gen(12);
  double first_loss = 0.0, last_loss = 0.0;
  for (int64_t step = 1; step <= steps; ++step) {
    std::vector<int32_t> inputs, targets;
    for (int64_t b = 0; b < kBatch; ++b) {
      const int64_t at = gen.randint(static_cast<int64_t>(text.size()) - kContext);
      for (int64_t t = 0; t < kContext; ++t) {
        inputs.push_back(chars[text[at + t]]);
        targets.push_back(chars[text[at + t + 1]]);
      }
    }
    adam.zero_grad();
    rg::Var logits = model.forward(rg::Indices(rg::Shape{kBatch, kContext}, inputs));
    rg::Var loss = rg::cross_entropy(rg::reshape(logits, {kBatch * kContext, -1}), rg::Indices(targets));
    loss.backward();
    rg::clip_grad_norm(model.named_parameters(), 1.0);
    adam.step();
    last_loss = loss.item();
    if (step == 1) first_loss = last_loss;
    if (step % 50 == 0 || step == steps) std::printf("step %lld  loss %.4f\n", static_cast<long long>(step), last_loss);
  }

  // Sampling: one character at a time through the layers' caches.
  rg::NoGradGuard no_grad;
  std::vector<rg::KeyValues> caches(model.blocks->size());
  std::string sample(1, text[0]);
  for (int64_t i = 0; i + 1 < kContext; ++i) {
    const rg::Var logits = model.forward(rg::Indices(rg::Shape{1, 1}, {chars[sample.back()]}),
                                         i, &caches);
    const rg::Tensor p = rg::softmax(rg::reshape(logits, {-1}) / 0.8f, 0).value();  // temperature 0.8
    sample.push_back(alphabet[static_cast<size_t>(rg::multinomial(p, 1, true, gen).values[0])]);
  }
  std::printf("sample: %s\n", sample.c_str());
  return last_loss < 0.75 * first_loss ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
