#pragma once
// rmsgrad: a minimal tape-based autodiff framework in C++.
//
//   rg::Tensor     float32 row-major n-d array (core/tensor.h)
//   rg::Var        a value in the graph with its gradient (autograd/var.h)
//   rg::tape()     the thread's tape: backward() and clear() (autograd/tape.h)
//   ops            add, matmul, softmax, cross_entropy, ... (autograd/ops.h)
//
// A training step: build the loss from ops, call loss.backward(), update the
// parameters from their .grad(), then rg::tape().clear().
//
//   layers/        Module, Linear, Conv2d, Embedding, the norms (make_norm), GRU, LSTM, attention, ...
//   optim/         Adam, SGD, gradient clipping, learning-rate schedules
#include "autograd/composed_norm_ops.h"
#include "autograd/conv.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/order_violation.h"
#include "autograd/pooling.h"
#include "autograd/tape.h"
#include "autograd/var.h"
#include "autograd/weight_norm.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/random.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "layers/attention.h"
#include "layers/cgru.h"
#include "layers/conv.h"
#include "layers/dropout.h"
#include "layers/embedding.h"
#include "layers/gru.h"
#include "layers/init.h"
#include "layers/linear.h"
#include "layers/lstm.h"
#include "layers/module.h"
#include "layers/normalization.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
