#pragma once
// Each model's training recipe, written once: its sizes, its regularisation,
// its optimizer, its clip and its batch. Three readers take it from here:
//
//   the drivers        their flags default to it (build/bin/rnnsearch --help)
//   the benchmarks     bench/model_steps trains one step with it
//   the twins          PyTorch and JAX read it as the JSON that
//                      `bench_step --model M --recipe` prints (bench/torch_timing.py)
//
// so a timed step is the trained step, and our model and its twin train alike.
// Sizes are CPU-sized where the paper's are larger; each driver's comment
// gives the paper's (../shared/PAPER.md). The norm is not part of a recipe:
// it is what the experiments vary.
#include <cstdint>

#include "rmsgrad/train/training_step.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/optim/adam.h"

namespace rg {

// RNNSearch as Nematus trains it on WMT (the paper's Tables 2–3).
struct RNNSearchRecipe {
  int64_t vocab = 8000;  // joint SentencePiece pieces
  int64_t embed = 256, hidden = 256;
  float dropout = 0.2f, label_smoothing = 0.1f;
  AdamOptions adam{.lr = 1e-4};
  ClipOptions clip{.clip = 1.0};
  int64_t batch = 80;  // sentences
};

// The Transformer of the paper's Table 4 (Vaswani et al.'s base recipe):
// Adam β2 0.98, ε 1e-9, the learning rate rising for `warmup` steps to its
// peak and falling as 1/sqrt(step), no clip; batches counted in tokens.
struct TransformerRecipe {
  int64_t vocab = 8000;
  int64_t model_size = 256, ffn = 1024, heads = 4, layers = 3;
  float dropout = 0.1f, label_smoothing = 0.1f;
  AdamOptions adam{.lr = 7e-4, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-9};
  int64_t warmup = 4000;
  ClipOptions clip{};
  int64_t batch_tokens = 4096;  // padded tokens per step, on the longer side
};

// The attentive reader on CNN / bAbI / CBT questions (the paper's Table 6).
struct AttentiveReaderRecipe {
  int64_t embed = 240, hidden = 240;
  float dropout = 0.5f;
  AdamOptions adam{.lr = 8e-5};
  ClipOptions clip{.clip = 10.0};
  int64_t batch = 64;  // questions
};

// Order-embeddings of images and captions (the paper's Table 5): each
// parameter's gradient clipped to norm 2 on its own.
struct OrderEmbeddingRecipe {
  int64_t word_dim = 300, embed_dim = 1024;
  AdamOptions adam{.lr = 1e-3};
  ClipOptions clip{.clip = 2.0, .clip_per_parameter = true};
  int64_t batch = 128;  // captions, one image each
};

// ConvPool-CNN-C on CIFAR-10 (the paper's Table 10) at half the paper's
// width (width 1: 96 and 192 channels); dropout and input noise are
// ConvPoolCnnOptions' defaults.
struct ConvPoolRecipe {
  double width = 0.5;       // channel multiplier
  float p = 0.125f;         // pRMSNorm's fraction of units
  float eps = 1e-6f;        // the CIFAR code's ε in every norm
  AdamOptions adam{.lr = 3e-3};
  double lr_without_norm = 3e-4;
  ClipOptions clip{};
  int64_t batch = 100;  // images

  double lr(NormKind norm) const { return norm == NormKind::None ? lr_without_norm : adam.lr; }
};

// The LLaMA-style character language model (experiments/lm, models/llama.h):
// windows of `context` characters of the CBT books, Adam with LLaMA's
// β2 0.95, a warm-up then a cosine (the schedule changes the value, not the
// work), clip 1. The vocabulary is the books' 77 symbols; the driver reads
// its own from the text.
struct LanguageModelRecipe {
  int64_t vocab = 77;
  int64_t layers = 4, model_size = 256, heads = 4, ffn = 688;  // SwiGLU's width ≈ 8d/3
  int64_t context = 128;
  AdamOptions adam{.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.95};
  ClipOptions clip{.clip = 1.0};
  int64_t batch = 32;  // windows
};

}  // namespace rg
