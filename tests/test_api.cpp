// The API a user writes models against: composition (Sequential, ModuleList,
// MLP), save / load of modules, optimizers and training states, the data
// loader and the MNIST reader.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "rmsgrad/rmsgrad.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("rg_api_" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::vector<std::string> names(const Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, _] : m.named_parameters()) out.push_back(name);
  return out;
}

// One training step of `model` on a fixed batch; returns the loss.
float train_step(Layer& model, Optimizer& optimizer, const LabelledBatch& batch) {
  optimizer.zero_grad();
  Var loss = cross_entropy(model.forward(constant(batch.inputs)), batch.labels);
  loss.backward();
  optimizer.step();
  return loss.item();
}

LabelledTensors toy_data(int64_t n, Generator& gen) {
  LabelledTensors data{normal(Shape{n, 6}, 0.0f, 1.0f, gen), {}};
  for (int64_t i = 0; i < n; ++i) data.labels.push_back(data.inputs.data()[i * 6] > 0 ? 1 : 0);
  return data;
}

}  // namespace

TEST_CASE("Sequential chains its layers and names them by position, as nn.Sequential does") {
  Generator gen(1);
  Sequential net{std::make_shared<Linear>(4, 3, gen), std::make_shared<ActivationLayer>(Activation::Tanh),
                 std::make_shared<Linear>(3, 2, gen)};
  CHECK(names(net) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  Var x = constant(normal(Shape{5, 4}, 0.0f, 1.0f, gen));
  auto& first = dynamic_cast<Linear&>(net[0]);
  auto& last = dynamic_cast<Linear&>(net[2]);
  Var want = last.forward(tanh(first.forward(x)));
  CHECK(net.forward(x).value().to_vector() == want.value().to_vector());
  CHECK_THROWS_WITH_AS(net[3], "Sequential: index 3 is out of range for 3 layers", Error);
}

TEST_CASE("ModuleList registers its modules; train() and eval() reach every submodule") {
  ModuleList<Dropout> drops;
  drops.push_back(std::make_shared<Dropout>(0.5f));
  drops.push_back(std::make_shared<Dropout>(0.5f));
  Sequential outer;
  outer.add(std::make_shared<Lambda>([&](const Var& x) { return drops[1].forward(drops[0].forward(x)); }));
  ModuleList<> holder;
  auto inner = holder.push_back(std::make_shared<Sequential>());
  auto drop = inner->add(std::make_shared<Dropout>(0.5f));
  holder.eval();
  CHECK_FALSE(drop->is_training());
  Var x = constant(Tensor::ones(Shape{100}));
  CHECK(drop->forward(x).value().to_vector() == x.value().to_vector());  // identity in evaluation
  holder.train();
  CHECK(drop->is_training());
  CHECK(drops.size() == 2);
  CHECK_THROWS_AS(drops[2], Error);
}

TEST_CASE("MLP: Linear, norm, activation, dropout blocks, and a plain output layer") {
  Generator gen(2);
  MLP plain(8, {16, 16}, 3, gen);
  CHECK(plain.size() == 5);  // Linear ReLU Linear ReLU Linear
  CHECK(names(plain) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"});
  MLP normed(8, {16}, 3, gen, {.norm = {.kind = NormKind::RMSNorm}, .dropout = 0.1f});
  CHECK(names(normed) == std::vector<std::string>{"0.weight", "0.bias", "1.gain", "4.weight", "4.bias"});
  CHECK(normed.forward(constant(Tensor::ones(Shape{2, 8}))).shape() == Shape{2, 3});
  CHECK_THROWS_WITH_AS(MLP(8, {0}, 3), "MLP: hidden size 0 is not positive", Error);
}

TEST_CASE("layers construct with a default generator and no norm options") {
  manual_seed(7);
  Linear a(3, 2);
  manual_seed(7);
  Linear b(3, 2);
  CHECK(a.weight.value().to_vector() == b.weight.value().to_vector());
  GRU gru(3, 4);  // no norm, default generator
  Var x = constant(normal(Shape{5, 2, 3}, 0.0f, 1.0f, default_generator()));
  GRU::Output out = gru.run(x);  // every state and the last from one pass, as LSTM::run
  CHECK(out.states.shape() == Shape{5, 2, 4});
  CHECK(out.last.value().to_vector() == slice(out.states, 0, 4, 5).value().to_vector());
  CHECK(gru.last_state(x).value().to_vector() == out.last.value().to_vector());
  LSTM lstm(3, 4);
  CHECK(lstm.run(x).last.h.value().to_vector() == slice(lstm.run(x).states, 0, 4, 5).value().to_vector());
}

TEST_CASE("StackedGRU: layers read the states below; bidirectional layers concatenate both directions") {
  Generator gen(6);
  StackedGRU stack(3, 4, {.layers = 2, .bidirectional = true}, gen);
  Var x = constant(normal(Shape{5, 2, 3}, 0.0f, 1.0f, gen));
  StackedGRU::Output out = stack.run(x);
  CHECK(out.states.shape() == Shape{5, 2, 8});
  CHECK(out.last.size() == 4);
  CHECK(names(stack).front() == "forward.0.cell.weight_x_gates");

  // By hand: the second layer reads the first one's states.
  StackedGRU two(3, 4, {.layers = 2}, gen);
  GRU first(3, 4), second(4, 4);
  auto copy_weights = [&](GRU& gru, const std::string& prefix) {
    for (auto& [name, v] : gru.named_parameters())
      for (const auto& [stacked_name, w] : two.named_parameters())
        if (stacked_name == prefix + name) v.value().copy_from(w.value());
  };
  copy_weights(first, "forward.0.");
  copy_weights(second, "forward.1.");
  CHECK(two.run(x).states.value().to_vector() == second.forward(first.forward(x)).value().to_vector());
  CHECK_THROWS_WITH_AS(stack.run(x, {}, {x}), "StackedGRU: 1 initial states given, the stack has 4 (layers × directions)",
                       Error);
  StackedGRU plain(3, 4, {.layers = 3});
  CHECK(plain.run(x).states.shape() == Shape{5, 2, 4});
}

TEST_CASE("save and load a module: same outputs in another instance; strict about names and shapes") {
  ScratchDir dir;
  Generator gen(3);
  MLP model(5, {7}, 2, gen, {.norm = {.kind = NormKind::LayerNorm}});
  save(model, dir / "model.safetensors");
  MLP other(5, {7}, 2, {.norm = {.kind = NormKind::LayerNorm}});  // other weights
  Var x = constant(normal(Shape{4, 5}, 0.0f, 1.0f, gen));
  CHECK(other.forward(x).value().to_vector() != model.forward(x).value().to_vector());
  load(other, dir / "model.safetensors");
  CHECK(other.forward(x).value().to_vector() == model.forward(x).value().to_vector());

  MLP wider(5, {8}, 2);
  const Tensor before = wider.named_parameters()[0].second.value().clone();
  CHECK_THROWS_WITH_AS(load(wider, dir / "model.safetensors"),
                       doctest::Contains("tensor '0.weight' has shape [7, 5] in the checkpoint, the model expects [8, 5]"),
                       Error);
  CHECK(wider.named_parameters()[0].second.value().to_vector() == before.to_vector());  // unchanged
  MLP plain(5, {7}, 2);  // no LayerNorm: the file has tensors this model lacks
  CHECK_THROWS_WITH_AS(load(plain, dir / "model.safetensors"),
                       doctest::Contains("extra tensor '1.gain' the model does not have"), Error);
  CHECK_THROWS_WITH_AS(load(plain, dir / "missing.safetensors"), doctest::Contains("missing.safetensors"), Error);
}

TEST_CASE("a training state resumes exactly: the same losses as a run that never stopped") {
  ScratchDir dir;
  Generator data_gen(4);
  const LabelledTensors data = toy_data(40, data_gen);
  auto run = [&](int from, int to, const std::string& resume_from, const std::string& save_to) {
    manual_seed(11);
    MLP model(6, {8}, 2, {.dropout = 0.3f});  // its dropout's generator is saved and restored too
    Adam adam(model.named_parameters(), {.lr = 0.01});
    DataLoader loader(data, 8, {.seed = 5});
    if (!resume_from.empty()) {
      Metadata m = load_training_state(resume_from, model, adam);
      CHECK(std::stoi(m.at("step")) == from);
      loader.restore(CursorState::from_string(m.at("data")));
    }
    std::vector<float> losses;
    for (int step = from; step < to; ++step) losses.push_back(train_step(model, adam, loader.next()));
    if (!save_to.empty())
      save_training_state(save_to, model, adam, {{"step", std::to_string(to)}, {"data", loader.state().to_string()}});
    return losses;
  };
  const std::vector<float> straight = run(0, 12, "", "");
  std::vector<float> resumed = run(0, 7, "", dir / "state.safetensors");  // stops mid-epoch (5 batches each)
  const std::vector<float> rest = run(7, 12, dir / "state.safetensors", "");
  resumed.insert(resumed.end(), rest.begin(), rest.end());
  CHECK(resumed == straight);

  // An optimizer file alone, and the refusal of a file of the wrong kind.
  MLP model(6, {8}, 2);
  Adam adam(model.named_parameters());
  train_step(model, adam, gather(data, std::vector<int64_t>{0, 1, 2}));
  save(adam, dir / "adam.safetensors");
  Adam again(model.named_parameters());
  load(again, dir / "adam.safetensors");
  CHECK(again.step_count() == 1);
  CHECK_THROWS_WITH_AS(load(again, dir / "state.safetensors"),
                       doctest::Contains("not an rmsgrad optimizer file (its format is 'rmsgrad training state')"), Error);
}

TEST_CASE("generator states round-trip through text") {
  Generator gen(9);
  gen.uniform();
  gen.uniform();
  Generator copy;
  restore_generator(copy, generator_state(gen));
  CHECK(copy.uniform() == gen.uniform());
  CHECK_THROWS_AS(restore_generator(copy, "12 x"), Error);
}

TEST_CASE("DataLoader: every example once per epoch, seeded order, in order without shuffling") {
  Generator gen(5);
  const LabelledTensors data = toy_data(10, gen);
  DataLoader a(data, 4, {.seed = 3}), b(data, 4, {.seed = 3});
  CHECK(a.batches_per_epoch() == 3);
  std::vector<int32_t> seen;
  for (int i = 0; i < 3; ++i) {
    LabelledBatch x = a.next(), y = b.next();
    CHECK(x.inputs.to_vector() == y.inputs.to_vector());
    for (int64_t r = 0; r < x.size(); ++r)
      for (int64_t row = 0; row < 10; ++row)
        if (std::equal(x.inputs.data() + r * 6, x.inputs.data() + r * 6 + 6, data.inputs.data() + row * 6))
          seen.push_back(static_cast<int32_t>(row));
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(a.epoch() == 0);
  a.next();
  CHECK(a.epoch() == 1);

  DataLoader ordered(data, 4, {.shuffle = false});
  CHECK(ordered.next().labels.values == std::vector<int32_t>(data.labels.begin(), data.labels.begin() + 4));
  int64_t total = 0;
  for_each_batch(data, 3, [&](const LabelledBatch& batch) { total += batch.size(); });
  CHECK(total == 10);
  CHECK(data.rows(2, 5).size() == 3);
  CHECK_THROWS_AS(data.rows(5, 11), Error);
  CHECK_THROWS_WITH_AS(DataLoader(data, 0), "DataLoader: the batch size must be positive, not 0", Error);
}

TEST_CASE("accuracy and argmax") {
  const Tensor scores = Tensor::from(Shape{3, 3}, {0.1f, 0.7f, 0.2f, 0.5f, 0.5f, 0.0f, 0.0f, 0.0f, 1.0f});
  CHECK(argmax_rows(scores) == std::vector<int32_t>{1, 0, 2});  // a tie goes to the first
  CHECK(accuracy(scores, Indices(std::vector<int32_t>{1, 1, 2})) == doctest::Approx(2.0 / 3.0));
  CHECK_THROWS_AS(accuracy(scores, Indices(std::vector<int32_t>{1})), Error);
}

namespace {

std::string idx_bytes(uint32_t magic, std::vector<uint32_t> dims, const std::vector<uint8_t>& body) {
  std::string out;
  auto put = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  out.append(body.begin(), body.end());
  return out;
}

void write_file(const std::string& path, const std::string& bytes, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
}

}  // namespace

TEST_CASE("MNIST IDX files, gzipped or not, and their malformed forms") {
  ScratchDir dir;
  std::vector<uint8_t> pixels(2 * 3 * 2);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 20);
  write_file(dir / "images.gz", idx_bytes(0x803, {2, 3, 2}, pixels), true);
  write_file(dir / "labels", idx_bytes(0x801, {2}, {7, 3}), false);
  const LabelledTensors data = read_mnist(dir / "images.gz", dir / "labels");
  CHECK(data.inputs.shape() == Shape{2, 6});
  CHECK(data.inputs.data()[7] == doctest::Approx(140.0f / 255.0f));
  CHECK(data.labels == std::vector<int32_t>{7, 3});

  auto refuses = [&](const std::string& images, const std::string& labels, const std::string& message) {
    write_file(dir / "bad_images", images, false);
    write_file(dir / "bad_labels", labels, false);
    CHECK_THROWS_WITH_AS(read_mnist(dir / "bad_images", dir / "bad_labels"), doctest::Contains(message.c_str()), Error);
  };
  const std::string labels = idx_bytes(0x801, {2}, {7, 3});
  refuses(idx_bytes(0x801, {2, 3, 2}, pixels), labels, "not an IDX image file (magic number 0x00000801");
  refuses(idx_bytes(0x803, {2, 3, 2}, {1, 2, 3}), labels, "the header promises 12 bytes of pixels, the file holds 3");
  refuses(idx_bytes(0x803, {0x7fffffff, 4096, 4096}, {}), labels, "the header promises");  // nothing allocated for it
  refuses(idx_bytes(0x803, {2, 0, 2}, {}), labels, "the header's row count is 0");
  refuses(idx_bytes(0x803, {2, 3}, {}), labels, "the file ends inside its header");
  std::vector<uint8_t> longer = pixels;
  longer.push_back(0);
  refuses(idx_bytes(0x803, {2, 3, 2}, longer), labels, "there are bytes after the 12 pixels");
  refuses(idx_bytes(0x803, {2, 3, 2}, pixels), idx_bytes(0x801, {2}, {7, 12}), "label 1 is 12, not a digit");
  refuses(idx_bytes(0x803, {2, 3, 2}, pixels), idx_bytes(0x801, {1}, {7}), "holds 2 images but");
  CHECK_THROWS_WITH_AS(read_mnist(dir / "nowhere", dir / "labels"), doctest::Contains("cannot open the file"), Error);
}
