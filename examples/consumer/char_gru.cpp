// A character-level GRU language model: trains on a text, saves its whole
// training state, resumes from it, and samples text.
//
//   char_gru TEXT_FILE STATE_FILE STEPS [SAMPLE_CHARS]
//
// Trains until STEPS steps in all: from scratch, or from STATE_FILE when it
// exists (the model, Adam's moments and the loader's position, so the run
// continues exactly as if it had never stopped), then saves STATE_FILE and
// prints SAMPLE_CHARS characters (default 200) sampled from the model.
//
// Model: embedding (32) → GRU (192 units, layer-normalized if NORM=layernorm,
// RMS-normalized by default) → linear → softmax over the characters. A batch
// is 32 windows of 65 characters from a seeded shuffle of the text's windows;
// the loss is the cross-entropy of each next character.
#include <rmsgrad/rmsgrad.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "char_text.h"

namespace {

constexpr int64_t kWindow = 64;  // characters of context per training example
constexpr int64_t kBatch = 32;

class CharGRU : public rg::Module {
 public:
  explicit CharGRU(int64_t vocab) {
    register_module("embedding", embedding, std::make_shared<rg::Embedding>(vocab, 32, rg::default_generator(), 0.1f));
    register_module("gru", gru, std::make_shared<rg::GRU>(32, 192, rg::NormOptions{.kind = rg::NormKind::RMSNorm}));
    register_module("output", output, std::make_shared<rg::Linear>(192, vocab));
  }

  // ids [T, B] → logits [T, B, V] and the last state [B, H]; h0 [B, H] may be undefined.
  rg::Var forward(const rg::Indices& ids, const rg::Var& h0, rg::Var* last_state) {
    rg::GRU::Output out = gru->run(embedding->forward(ids), {}, h0);  // states [T, B, H], last [B, H]
    if (last_state) *last_state = out.last;
    return output->forward(out.states);
  }

  std::shared_ptr<rg::Embedding> embedding;
  std::shared_ptr<rg::GRU> gru;
  std::shared_ptr<rg::Linear> output;
};

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 4) {
    std::fprintf(stderr, "usage: char_gru TEXT_FILE STATE_FILE STEPS [SAMPLE_CHARS]\n");
    return 2;
  }
  const CharText chars = read_char_text(argv[1], 4 * (kWindow + 1));
  const std::string& text = chars.text;
  const std::string& alphabet = chars.alphabet;
  const std::string state_file = argv[2];
  const int64_t steps = std::stoll(argv[3]);
  const int64_t sample_chars = argc > 4 ? std::stoll(argv[4]) : 200;

  // Training examples: the windows of kWindow + 1 characters at every
  // kWindow-th position, dealt out by a seeded loader of a dataset without
  // labels: each row is a window's first position.
  const int64_t windows = (static_cast<int64_t>(text.size()) - 1) / kWindow;
  rg::DataLoader loader(rg::Tensor::arange(windows).reshape(rg::Shape{windows, 1}), std::min(kBatch, windows),
                        {.seed = 3});

  rg::manual_seed(5);
  CharGRU model(static_cast<int64_t>(alphabet.size()));
  rg::Adam adam(model.named_parameters(), {.lr = 3e-3});
  int64_t step = 0;
  if (std::filesystem::exists(state_file)) {
    const rg::Metadata m = rg::load_training_state(state_file, model, adam);
    step = std::stoll(m.at("step"));
    loader.restore(rg::CursorState::from_string(m.at("data")));
    std::printf("resumed from %s at step %lld\n", state_file.c_str(), static_cast<long long>(step));
  }

  for (; step < steps; ++step) {
    const rg::LabelledBatch batch = loader.next();
    const int64_t B = batch.size();
    std::vector<int32_t> inputs(static_cast<size_t>(kWindow * B)), targets(inputs.size());
    for (int64_t b = 0; b < B; ++b) {
      const auto first = static_cast<int64_t>(batch.inputs.data()[b]) * kWindow;
      for (int64_t t = 0; t < kWindow; ++t) {  // time-major [T, B], as the GRU takes it
        inputs[static_cast<size_t>(t * B + b)] = chars[text[first + t]];
        targets[static_cast<size_t>(t * B + b)] = chars[text[first + t + 1]];
      }
    }
    adam.zero_grad();
    rg::Var logits = model.forward(rg::Indices(rg::Shape{kWindow, B}, inputs), {}, nullptr);
    rg::Var loss = rg::cross_entropy(rg::reshape(logits, {-1, logits.dim(2)}), rg::Indices(targets));
    loss.backward();
    rg::clip_grad_norm(model.named_parameters(), 1.0);
    adam.step();
    if ((step + 1) % 20 == 0 || step + 1 == steps)
      std::printf("step %lld  loss %.6f\n", static_cast<long long>(step + 1), loss.item());
  }
  rg::save_training_state(state_file, model, adam,
                          {{"step", std::to_string(step)}, {"data", loader.state().to_string()}});

  // Sampling: feed one character at a time, carrying the state; nothing is
  // recorded, so no graph grows however long the sample is.
  rg::NoGradGuard no_grad;
  model.eval();
  rg::Generator gen(7);
  std::string sample(1, text[0]);
  rg::Var state;
  for (int64_t i = 0; i < sample_chars; ++i) {
    const int32_t id = chars[sample.back()];
    rg::Var logits = model.forward(rg::Indices(rg::Shape{1, 1}, {id}), state, &state);
    const rg::Tensor p = rg::softmax(rg::reshape(logits, {-1}), 0).value();
    float u = gen.uniform(), acc = 0.0f;
    size_t next = alphabet.size() - 1;
    for (size_t c = 0; c < alphabet.size(); ++c)
      if ((acc += p.data()[c]) > u) {
        next = c;
        break;
      }
    sample.push_back(alphabet[next]);
  }
  std::printf("sample: %s\n", sample.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
