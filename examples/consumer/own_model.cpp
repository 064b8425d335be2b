// A model of your own, trained with the library's Trainer (train/) from a
// loop of your own. Outside the tree, against the installed library:
//
//   own_model --out runs/spirals --steps 600 --norm rmsnorm   (and --threads N, --seed N, --resume)
//
// The task: two interleaved spirals, a point's class is its spiral. The model:
// two hidden layers, each Linear → norm → tanh, with the norm chosen by --norm.
// The run directory gets what every driver's gets: config.json, metrics.jsonl,
// train.log, checkpoint.safetensors (--resume continues it) and best.safetensors.
#include <rmsgrad/rmsgrad.h>

#include <charconv>
#include <cmath>
#include <string>

using namespace rg;

namespace {

class SpiralNet : public Module {
 public:
  SpiralNet(int64_t hidden, NormKind norm, Generator& gen) {
    NormOptions options{.kind = norm};
    register_module("in", in, std::make_shared<Linear>(2, hidden, gen));
    register_module("norm_in", norm_in, make_norm(options, hidden));
    register_module("mid", mid, std::make_shared<Linear>(hidden, hidden, gen));
    register_module("norm_mid", norm_mid, make_norm(options, hidden));
    register_module("out", out, std::make_shared<Linear>(hidden, 2, gen));
  }
  Var forward(const Var& x) {
    Var h = tanh(norm_in->forward((*in)(x)));
    h = tanh(norm_mid->forward((*mid)(h)));
    return (*out)(h);
  }
  Var operator()(const Var& x) { return forward(x); }
  std::shared_ptr<Linear> in, mid, out;
  std::shared_ptr<Norm> norm_in, norm_mid;
};

struct Points {
  Tensor x;  // [N, 2]
  std::vector<int32_t> labels;
};

// n points on two spirals r = t, θ = t + π·class, with a little noise.
Points spirals(int64_t n, uint64_t seed) {
  Generator gen(seed);
  Points p{Tensor::empty(Shape{n, 2}), {}};
  for (int64_t i = 0; i < n; ++i) {
    const int32_t label = static_cast<int32_t>(i % 2);
    const float t = gen.uniform(0.25f, 3.0f * 3.14159265f), angle = t + 3.14159265f * static_cast<float>(label);
    p.x.data()[2 * i] = t * std::cos(angle) / 10.0f + gen.normal(0.0f, 0.02f);
    p.x.data()[2 * i + 1] = t * std::sin(angle) / 10.0f + gen.normal(0.0f, 0.02f);
    p.labels.push_back(label);
  }
  return p;
}

double error_pct(const Var& logits, const std::vector<int32_t>& labels) {
  int64_t wrong = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const float* row = logits.value().data() + 2 * i;
    wrong += (row[1] > row[0] ? 1 : 0) != labels[i];
  }
  return 100.0 * static_cast<double>(wrong) / static_cast<double>(labels.size());
}

// A whole number given to `flag`, or an error that says which.
int64_t whole_number(const std::string& flag, const std::string& text) {
  int64_t n = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
  check(error == std::errc() && end == text.data() + text.size() && n >= 0, "{} takes a whole number, got '{}'", flag,
        text);
  return n;
}

// The few flags this program has, read by hand: the library's options are
// plain structs, and a program fills them however it likes.
int train(int argc, char** argv) {
  RunOptions run_options{.out = "runs/spirals"};
  TrainingOptions training{.steps = 600, .eval_every = 100, .clip = 5.0, .best_metric = "accuracy"};
  std::string norm = "rmsnorm";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      check(i + 1 < argc, "{} needs a value; see the top of own_model.cpp", flag);
      return argv[++i];
    };
    if (flag == "--out") run_options.out = value();
    else if (flag == "--steps") training.steps = whole_number(flag, value());
    else if (flag == "--threads") run_options.threads = static_cast<int>(whole_number(flag, value()));
    else if (flag == "--seed") run_options.seed = static_cast<uint64_t>(whole_number(flag, value()));
    else if (flag == "--norm") norm = value();
    else if (flag == "--resume") run_options.resume = true;
    else throw Error(fmt::format("unknown flag '{}': own_model takes --out, --steps, --threads, --seed, --norm, --resume",
                                 flag));
  }

  Run run(run_options);  // prints and records these options
  Points train_set = spirals(2000, run_options.seed + 100), valid_set = spirals(400, run_options.seed + 101);
  Generator init(run_options.seed);
  SpiralNet model(64, parse_norm_kind(norm), init);
  Adam adam(model.named_parameters(), AdamOptions{.lr = 0.01});
  BatchCursor cursor(shuffled_batches(2000, 50), run_options.seed + 1);

  auto validation = [&] {
    NoGradGuard no_grad;
    Var logits = model(constant(valid_set.x));
    const double error = error_pct(logits, valid_set.labels);
    return Evaluation{.loss = cross_entropy(logits, Indices(valid_set.labels)).item(),
                      .fields = {{"error_pct", error}},
                      .score = 100.0 - error};
  };

  Trainer trainer(run, model, adam, training);
  trainer.keep(cursor);  // restored exactly on --resume
  trainer.start();
  if (trainer.due_for_validation()) trainer.validate(validation());
  while (trainer.running()) {
    const Batch& batch = cursor.next();
    std::vector<int32_t> rows(batch.begin(), batch.end()), labels;
    for (int32_t row : rows) labels.push_back(train_set.labels[static_cast<size_t>(row)]);
    trainer.step(cross_entropy(model(index_select(constant(train_set.x), 0, rows)), Indices(labels)));
    if (trainer.due_for_log()) trainer.log_train();
    if (trainer.due_for_validation()) trainer.validate(validation());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return run_main(argc, argv, train);
}
