#pragma once
// rmsgrad: a minimal tape-based autodiff framework in C++.
//
//   rg::Tensor     float32 row-major n-d array (core/tensor.h)
//   rg::Var        a value in the graph with its gradient (autograd/var.h)
//   rg::tape()     the thread's tape of recorded ops (autograd/tape.h)
//   ops            add, matmul, softmax, cross_entropy, ... (autograd/ops.h)
//
// A training step: build the loss from ops, call loss.backward(), let the
// optimizer update the parameters from their .grad() and zero them. The graph
// is freed when its last Var goes; nothing needs clearing.
//
//   data/          LabelledTensors, DataLoader (seeded shuffling, resumable),
//                  padded sequence batches, the MNIST reader, accuracy
//   layers/        Module and Layer, Sequential, ModuleList, MLP, Linear,
//                  Conv2d, Embedding, the norms (make_norm), GRU, LSTM,
//                  attention (rotary, causal), Transformer layers, dropout;
//                  save / load of a module
//   optim/         Adam, SGD, gradient clipping, learning-rate schedules;
//                  save / load of an optimizer and of a whole training state
//   dist/          data-parallel training over MPI (the Trainer uses it)
//   models/        the paper's models, included one by one
//                  ("rmsgrad/models/rnnsearch.h", convpool_cnn.h, ...),
//                  and a LLaMA-style language model (models/llama.h)
//   train/         Run (the run directory: logs, lock, resume), Trainer
//                  (steps, accumulation, clipping, validation, checkpoints),
//                  TrainingStep, the progress bar
//   core/gemm.h    the products' precision: set_product_precision(Precision::BF16)
#include "rmsgrad/autograd/composed_norm_ops.h"
#include "rmsgrad/autograd/conv.h"
#include "rmsgrad/autograd/gradcheck.h"
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/autograd/order_violation.h"
#include "rmsgrad/autograd/pooling.h"
#include "rmsgrad/autograd/rotary.h"
#include "rmsgrad/autograd/tape.h"
#include "rmsgrad/autograd/var.h"
#include "rmsgrad/autograd/weight_norm.h"
#include "rmsgrad/core/checkpoint.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/escape_bytes.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/observer.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/polite_threads.h"
#include "rmsgrad/core/random.h"
#include "rmsgrad/core/shape.h"
#include "rmsgrad/core/tensor.h"
#include "rmsgrad/data/batching.h"
#include "rmsgrad/data/loader.h"
#include "rmsgrad/data/mnist.h"
#include "rmsgrad/layers/activations.h"
#include "rmsgrad/layers/attention.h"
#include "rmsgrad/layers/conv.h"
#include "rmsgrad/layers/dropout.h"
#include "rmsgrad/layers/embedding.h"
#include "rmsgrad/layers/gru.h"
#include "rmsgrad/layers/init.h"
#include "rmsgrad/layers/linear.h"
#include "rmsgrad/layers/lstm.h"
#include "rmsgrad/layers/mlp.h"
#include "rmsgrad/layers/module.h"
#include "rmsgrad/layers/normalization.h"
#include "rmsgrad/layers/save_load.h"
#include "rmsgrad/layers/sequential.h"
#include "rmsgrad/layers/transformer.h"
#include "rmsgrad/optim/adam.h"
#include "rmsgrad/optim/clip.h"
#include "rmsgrad/optim/optimizer.h"
#include "rmsgrad/optim/save_load.h"
#include "rmsgrad/optim/schedule.h"
#include "rmsgrad/optim/sgd.h"
#include "rmsgrad/train/progress.h"
#include "rmsgrad/train/run.h"
#include "rmsgrad/train/trainer.h"
#include "rmsgrad/train/training_step.h"
