#pragma once
// Order-embeddings for image–caption retrieval (Vendrov et al. 2016), the
// model Zhang & Sennrich 2019 (Tables 7 and 8) train with each norm inside
// the sentence encoder's GRU:
//
//   caption ids [T, B] → word vectors (300) → GRU (1024, the paper's four
//     normalized groups) → the state after the last word        s [B, H]
//   image features [B, D] → Linear D → H                         im [B, H]
//   both rows L2-normalised, then |·| (order; the cosine baseline keeps signs)
//
// Each pair (caption i, image j) gets an error, lower meaning a better match:
//
//   order:   E[i, j] = ‖max(0, s_i − im_j)‖²    (autograd/order_violation.h)
//   cosine:  E[i, j] = −s_i · im_j
//
// and the contrastive loss pits every matching pair (the diagonal of a batch
// of B captions with their B images) against every other pair in its row and
// in its column, with margin m (0.05 for order, 0.2 for cosine):
//
//   L = Σ_{i≠j} max(0, m − E[i, j] + E[j, j])      other captions i for image j
//     + Σ_{i≠j} max(0, m − E[i, j] + E[i, i])      other images j for caption i
//
// a sum over the batch, not a mean, as in Vendrov's code. Initialisation:
// word vectors and the GRU's input weights N(0, 0.1²), its recurrent blocks
// orthogonal, the image encoder Glorot-uniform with zero bias.
#include <cstdint>
#include <memory>
#include <string_view>

#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/dist/batch_share.h"
#include "rmsgrad/dist/process_group.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/layers/embedding.h"
#include "rmsgrad/layers/gru.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"

namespace rg {

enum class SimilarityKind { Order, Cosine };
SimilarityKind parse_similarity(std::string_view name);  // "order" | "cosine"

struct OrderEmbeddingOptions {
  int64_t vocab_size = 0;
  int64_t word_dim = 300;
  int64_t embed_dim = 1024;  // the GRU's hidden size and the joint space
  int64_t image_dim = 2048;
  NormOptions norm;  // inside the GRU only
  SimilarityKind similarity = SimilarityKind::Order;
  float margin = 0.0f;       // 0: 0.05 for order, 0.2 for cosine
  float init_stddev = 0.1f;  // word vectors and GRU input weights
  float l2_eps = 1e-8f;      // x / sqrt(Σx² + ε)
};

// Rows of x [N, D] scaled to unit L2 norm: x / sqrt(Σ_d x² + ε).
Var l2_normalize_rows(const Var& x, float eps);

// The contrastive loss above from the errors E [B, B] of B matching pairs.
Var contrastive_loss(const Var& errors, float margin);
// One process's part of it under data parallelism, for its pairs
// first … first + L − 1: the caption terms of its rows, rows = E[mine, :]
// [L, B], and the image terms of its columns, columns = E[:, mine] [B, L].
// Summed over the processes this is contrastive_loss(E).
Var contrastive_loss_part(const Var& rows, const Var& columns, int64_t first, float margin);

class OrderEmbeddingModel : public Module {
 public:
  OrderEmbeddingModel(const OrderEmbeddingOptions& options, Generator& gen);

  // ids [T, B], mask [T, B] (1 = word) → caption embeddings [B, H].
  Var encode_captions(const Indices& ids, const Tensor& mask);
  // features [N, D] → image embeddings [N, H].
  Var encode_images(const Var& features);
  // Caption embeddings [Nc, H] × image embeddings [Ni, H] → errors [Nc, Ni].
  Var errors(const Var& captions, const Var& images) const;
  // The loss of a batch of matching pairs: caption b describes image b.
  Var loss(const Indices& ids, const Tensor& mask, const Var& features);
  // Data-parallel: this process's pairs (share.rows of them) of a global
  // batch. Its captions are compared with every image of the batch and its
  // images with every caption (the others' embeddings gathered, with their
  // gradient: dist/gather_rows.h); summed over the processes this is loss()
  // of the whole batch. With one process, loss().
  Var loss(const Indices& ids, const Tensor& mask, const Var& features, const dist::BatchShare& share,
           dist::ProcessGroup& group);

  const OrderEmbeddingOptions& options() const { return options_; }
  float margin() const { return options_.margin; }

  std::shared_ptr<Embedding> words;
  std::shared_ptr<GRU> gru;
  std::shared_ptr<Linear> image_encoder;

 private:
  Var to_joint_space(const Var& x) const;  // L2-normalise, then |·| for order
  OrderEmbeddingOptions options_;
};

}  // namespace rg
