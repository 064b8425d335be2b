#include "rmsgrad/experiments/common/flags.h"
#include "rmsgrad/experiments/order_embedding/oe_config.h"

namespace rg::oe {

void add_oe_flags(CLI::App& app, OeConfig& cfg) {
  add_run_options(app, cfg.run);
  app.add_option("--features", cfg.features, "image features, a .npy matrix (N, D); empty: the synthetic task");
  app.add_option("--captions", cfg.captions,
                 "caption files: K files of N lines, or one file of N·K lines grouped by image")
      ->delimiter(',');
  app.add_option("--captions-per-image", cfg.captions_per_image, "K when --captions is one file")
      ->check(rg::positive);
  add_norm_flags(app, cfg.norm, {"none", "layernorm", "rmsnorm", "prmsnorm"}, "inside the GRU");
  app.add_option("--method", cfg.method, "order (order-violation penalty) or cosine (the symmetric baseline)")
      ->check(CLI::IsMember({"order", "cosine"}));
  app.add_option("--margin", cfg.margin, "contrastive margin (0: 0.05 for order, 0.2 for cosine)")
      ->check(rg::non_negative);
  app.add_option("--word-dim", cfg.word_dim, "word vector size")->check(rg::in_range(1, 1 << 16));
  app.add_option("--embed-dim", cfg.embed_dim, "GRU hidden size and joint space size")->check(rg::in_range(1, 1 << 16));
  app.add_option("--batch", cfg.batch, "caption–image pairs per step")->check(rg::in_range(2, 1 << 20));
  app.add_option("--lr", cfg.lr, "Adam learning rate")->check(rg::positive);
  app.add_option("--clip", cfg.training.clip, "each parameter's gradient norm is clipped to this")
      ->check(rg::positive);
  app.add_option("--steps", cfg.training.steps, "training steps")->check(rg::positive);
  app.add_option("--eval-every", cfg.training.eval_every, "steps between validations")->check(rg::positive);
  app.add_option("--min-count", cfg.min_count, "words seen fewer times in training become <unk>")
      ->check(rg::positive);
  app.add_option("--fold-images", cfg.fold_images, "images per evaluation fold")->check(rg::positive);
  app.add_option("--synthetic-images", cfg.synthetic_images, "images of the synthetic task")
      ->check(rg::in_range(10, 1 << 24));
  app.add_option("--synthetic-dim", cfg.synthetic_dim, "feature size of the synthetic images")
      ->check(rg::positive);
  add_trainer_flags(app, cfg.training);
}

OrderEmbeddingOptions model_options(const OeConfig& cfg, int64_t vocab, int64_t image_dim) {
  OrderEmbeddingOptions options;
  options.vocab_size = vocab;
  options.word_dim = cfg.word_dim;
  options.embed_dim = cfg.embed_dim;
  options.image_dim = image_dim;
  options.norm = cfg.norm;
  options.similarity = parse_similarity(cfg.method);
  options.margin = cfg.margin;
  return options;
}

}  // namespace rg::oe
