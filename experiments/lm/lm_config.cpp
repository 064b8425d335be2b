#include "rmsgrad/experiments/lm/lm_config.h"

#include "rmsgrad/experiments/common/flags.h"

namespace rg::lm {

void add_lm_flags(CLI::App& app, LmConfig& cfg) {
  add_run_options(app, cfg.run);
  app.add_option("--data", cfg.data, "the folder of CBT's cbt_valid.txt and cbt_test.txt; empty: synthetic sentences");
  app.add_option("--valid-book", cfg.valid_book, "the CBT book held out for validation");
  app.add_option("--synthetic-chars", cfg.synthetic_chars, "characters of synthetic training text")
      ->check(in_range(1000, 1 << 30));
  add_norm_flags(app, cfg.norm, {"none", "layernorm", "rmsnorm", "prmsnorm"}, "in every block and at the end");
  app.add_option("--layers", cfg.layers, "blocks")->check(in_range(1, 64));
  app.add_option("--model-size", cfg.model_size, "width d")->check(in_range(2, 8192));
  app.add_option("--heads", cfg.heads, "attention heads (d/heads even)")->check(in_range(1, 256));
  app.add_option("--ffn", cfg.ffn, "SwiGLU's hidden width")->check(in_range(1, 65536));
  app.add_option("--context", cfg.context, "characters a position sees (training window)")->check(in_range(2, 8192));
  app.add_option("--batch", cfg.batch, "windows per step")->check(in_range(1, 1 << 16));
  app.add_flag("--tie", cfg.tie, "the output projection is the embedding");
  app.add_option("--lr", cfg.lr, "peak learning rate")->check(in_range(1e-7, 1.0));
  app.add_option("--steps", cfg.training.steps, "optimizer steps (the schedule spans them)")->check(positive);
  app.add_option("--eval-every", cfg.training.eval_every, "steps between validations")->check(positive);
  app.add_option("--warmup", cfg.warmup, "steps of linear warm-up (-1: a tenth of --steps, at most 100)")
      ->check(in_range(-1, 1e9));
  app.add_option("--valid-chars", cfg.valid_chars, "characters of the held-out book each validation reads")
      ->check(positive);
  app.add_option("--sample-chars", cfg.sample_chars, "characters sampled at the end (0: none)")
      ->check(in_range(0, 10'000'000));
  app.add_option("--prompt", cfg.prompt, "the text the sample continues, in the training text's characters");
  app.add_option("--temperature", cfg.temperature, "sampling temperature (0: always the likeliest)")
      ->check(in_range(0.0, 100.0));
  app.add_option("--top-k", cfg.top_k, "sample among the k likeliest (0: all)")->check(non_negative);
  add_trainer_flags(app, cfg.training);
}

LlamaOptions model_options(const LmConfig& cfg, int64_t vocab) {
  return {.vocab = vocab, .layers = cfg.layers, .model_size = cfg.model_size, .heads = cfg.heads,
          .ffn_size = cfg.ffn, .norm = cfg.norm, .tie_embeddings = cfg.tie, .context = cfg.context};
}

}  // namespace rg::lm
