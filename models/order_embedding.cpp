// Order-embeddings; the model and the loss are described in order_embedding.h.
#include "rmsgrad/models/order_embedding.h"

#include "rmsgrad/autograd/order_violation.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/dist/gather_rows.h"

namespace rg {

SimilarityKind parse_similarity(std::string_view name) {
  if (name == "order") return SimilarityKind::Order;
  if (name == "cosine") return SimilarityKind::Cosine;
  throw Error(fmt::format("unknown similarity '{}' (order|cosine)", name));
}

Var l2_normalize_rows(const Var& x, float eps) {
  check(x.rank() == 2, "l2_normalize_rows: x must be [N, D], got {}", x.shape());
  // x / sqrt(Σx² + ε) is the L2-Norm kernel with a constant gain of 1: one
  // fused op instead of five, and its backward is the RMSNorm family's.
  RmsNormConfig l2;
  l2.eps = eps;
  l2.l2 = true;
  return rms_norm(x, constant(Tensor::ones(Shape{x.dim(1)})), Var(), l2);
}

Var contrastive_loss(const Var& errors, float margin) {
  check(errors.rank() == 2 && errors.dim(0) == errors.dim(1),
        "contrastive_loss: errors must be [B, B] for B matching pairs, got {}", errors.shape());
  const int64_t b = errors.dim(0);
  // The matching pairs' errors d_i = E[i, i], and a mask that drops them from
  // the sum (a pair is not its own negative).
  Tensor eye = Tensor::zeros(Shape{b, b});
  Tensor off_diagonal = Tensor::full(Shape{b, b}, 1.0f);
  for (int64_t i = 0; i < b; ++i) {
    eye.data()[i * b + i] = 1.0f;
    off_diagonal.data()[i * b + i] = 0.0f;
  }
  Var diagonal = sum(errors * constant(eye), 1, false);              // [B]
  Var margin_minus = margin - errors;                                // m − E[i, j]
  Var per_image = relu(margin_minus + reshape(diagonal, {1, b}));    // + E[j, j]
  Var per_caption = relu(margin_minus + reshape(diagonal, {b, 1}));  // + E[i, i]
  return sum((per_image + per_caption) * constant(off_diagonal));
}

Var contrastive_loss_part(const Var& rows, const Var& columns, int64_t first, float margin) {
  const int64_t mine = rows.dim(0), b = rows.dim(1);
  check(rows.rank() == 2 && columns.rank() == 2 && columns.dim(0) == b && columns.dim(1) == mine && first >= 0 &&
            first + mine <= b,
        "contrastive_loss_part: rows {} and columns {} must be [L, B] and [B, L] for pairs {}…", rows.shape(),
        columns.shape(), first);
  // E[i, i] of this process's pairs, taken from its rows; masks that drop the
  // matching pair from its own row and column.
  Tensor pick = Tensor::zeros(Shape{mine, b});
  Tensor off_row = Tensor::full(Shape{mine, b}, 1.0f), off_column = Tensor::full(Shape{b, mine}, 1.0f);
  for (int64_t k = 0; k < mine; ++k) {
    pick.data()[k * b + first + k] = 1.0f;
    off_row.data()[k * b + first + k] = 0.0f;
    off_column.data()[(first + k) * mine + k] = 0.0f;
  }
  Var diagonal = sum(rows * constant(pick), 1, false);                                   // [L]
  Var per_caption = relu((margin - rows) + reshape(diagonal, {mine, 1}));                 // caption i, images j
  Var per_image = relu((margin - columns) + reshape(diagonal, {1, mine}));                // image j, captions i
  return sum(per_caption * constant(off_row)) + sum(per_image * constant(off_column));
}

OrderEmbeddingModel::OrderEmbeddingModel(const OrderEmbeddingOptions& options, Generator& gen) : options_(options) {
  check(options.vocab_size > 0, "OrderEmbeddingModel: vocab_size must be positive, got {}", options.vocab_size);
  if (options_.margin == 0.0f) options_.margin = options.similarity == SimilarityKind::Order ? 0.05f : 0.2f;
  register_module("words", words, std::make_shared<Embedding>(options.vocab_size, options.word_dim, gen, options.init_stddev));
  GRUInit gru_init;
  gru_init.stddev = options.init_stddev;
  register_module("gru", gru, std::make_shared<GRU>(options.word_dim, options.embed_dim, options.norm, gen, false, gru_init));
  register_module("image_encoder", image_encoder, std::make_shared<Linear>(options.image_dim, options.embed_dim, gen));
}

Var OrderEmbeddingModel::to_joint_space(const Var& x) const {
  Var unit = l2_normalize_rows(x, options_.l2_eps);
  return options_.similarity == SimilarityKind::Order ? abs(unit) : unit;
}

Var OrderEmbeddingModel::encode_captions(const Indices& ids, const Tensor& mask) {
  check(ids.shape.rank() == 2, "OrderEmbeddingModel: caption ids must be [T, B], got {}", ids.shape);
  return to_joint_space(gru->last_state(words->forward(ids), mask));
}

Var OrderEmbeddingModel::encode_images(const Var& features) {
  check(features.rank() == 2 && features.dim(1) == options_.image_dim,
        "OrderEmbeddingModel: image features must be [N, {}], got {}", options_.image_dim, features.shape());
  return to_joint_space(image_encoder->forward(features));
}

Var OrderEmbeddingModel::errors(const Var& captions, const Var& images) const {
  if (options_.similarity == SimilarityKind::Order) return order_violation(captions, images);
  return neg(matmul(captions, images, false, true));
}

Var OrderEmbeddingModel::loss(const Indices& ids, const Tensor& mask, const Var& features) {
  check(ids.shape.rank() == 2 && features.rank() == 2 && ids.shape[1] == features.dim(0),
        "OrderEmbeddingModel: {} captions [T, B] = {} but {} images", ids.shape.rank() == 2 ? ids.shape[1] : -1,
        ids.shape, features.rank() == 2 ? features.dim(0) : -1);
  return contrastive_loss(errors(encode_captions(ids, mask), encode_images(features)), margin());
}

Var OrderEmbeddingModel::loss(const Indices& ids, const Tensor& mask, const Var& features,
                              const dist::BatchShare& share, dist::ProcessGroup& group) {
  if (share.whole()) return loss(ids, mask, features);
  check(ids.shape.rank() == 2 && ids.shape[1] == share.rows && features.rank() == 2 && features.dim(0) == share.rows,
        "OrderEmbeddingModel: this process's {} pairs, got captions {} and images {}", share.rows, ids.shape,
        features.shape());
  Var captions = encode_captions(ids, mask), images = encode_images(features);
  Var all_captions = dist::gather_rows(captions, share, group), all_images = dist::gather_rows(images, share, group);
  return contrastive_loss_part(errors(captions, all_images), errors(all_captions, images), share.first, margin());
}

}  // namespace rg
