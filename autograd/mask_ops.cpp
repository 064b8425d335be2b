// Masks and dropout.
//
//   masked_fill  y = value where mask ≠ 0, else x       dx += g · [mask = 0]
//   where        y = a where cond ≠ 0, else b           da += g · [cond ≠ 0], db += g · [cond = 0]
//   dropout      y = x · m, m ∈ {0, 1/(1−p)}            dx += g · m   (m saved, a byte each)
//   relu_dropout y = max(x, 0) · m                       dx += g · m · [x > 0] = g / (1−p) · [y > 0]
//
// relu_dropout saves no mask: y > 0 exactly where x > 0 and the element was
// kept, so y says where the gradient passes, and a ReLU's pass and its
// backward's are saved (a Transformer's feed-forward layer).
//
// Masks are float tensors that broadcast to the input (a padding mask [B, T]
// can be applied to scores [B, T] or, reshaped to [B, T, 1], to [B, T, H]).
#include "rmsgrad/autograd/ops.h"
#include "rmsgrad/core/broadcast.h"
#include "rmsgrad/core/error.h"
#include "rmsgrad/core/fast_math.h"

namespace rg {

namespace {

// The 0/1 keep-mask (1 where `mask` is zero) expanded to `shape`.
Tensor expand_keep(const Tensor& mask, const Shape& shape, const char* op) {
  check(mask.defined(), "{}: undefined mask", op);
  check(broadcast_shapes(mask.shape(), shape, op) == shape, "{}: mask {} does not broadcast to {}", op,
        mask.shape(), shape);
  Tensor keep = Tensor::empty(shape);
  Tensor zeros = Tensor::zeros(shape);
  broadcast_binary(mask, zeros, keep, [](float m, float) { return m != 0.0f ? 0.0f : 1.0f; });
  return keep;
}

}  // namespace

Var masked_fill(const Var& x, const Tensor& mask, float value) {
  check(x.defined(), "masked_fill: undefined input");
  Tensor keep = expand_keep(mask, x.shape(), "masked_fill");
  Tensor out = Tensor::empty(x.shape());
  const float *px = x.value().data(), *pk = keep.data();
  float* po = out.data();
  parallel_for(out.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = pk[i] != 0.0f ? px[i] : value;
  });
  return tape().record("masked_fill", std::move(out), {x}, [keep](Node& n) {
    Tensor* dx = n.input_grad(0);
    if (!dx) return;
    const float *g = n.grad.data(), *k = keep.data();
    float* d = dx->data();
    parallel_for(dx->numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) d[i] += g[i] * k[i];
    });
  });
}

Var where(const Tensor& condition, const Var& a, const Var& b) {
  check(a.defined() && b.defined(), "where: undefined input");
  check(a.shape() == b.shape(), "where: a {} and b {} must have the same shape", a.shape(), b.shape());
  Tensor take_b = expand_keep(condition, a.shape(), "where");  // 1 where condition is zero
  Tensor out = Tensor::empty(a.shape());
  const float *pa = a.value().data(), *pb = b.value().data(), *pt = take_b.data();
  float* po = out.data();
  parallel_for(out.numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = pt[i] != 0.0f ? pb[i] : pa[i];
  });
  return tape().record("where", std::move(out), {a, b}, [take_b](Node& n) {
    const float *g = n.grad.data(), *t = take_b.data();
    const int64_t count = n.value.numel();
    if (Tensor* da = n.input_grad(0)) {
      float* d = da->data();
      for (int64_t i = 0; i < count; ++i) d[i] += g[i] * (1.0f - t[i]);
    }
    if (Tensor* db = n.input_grad(1)) {
      float* d = db->data();
      for (int64_t i = 0; i < count; ++i) d[i] += g[i] * t[i];
    }
  });
}

Var dropout(const Var& x, float p, bool training, Generator& gen, int batch_axis) {
  check(x.defined(), "dropout: undefined input");
  check(p >= 0.0f && p < 1.0f, "dropout: probability must be in [0, 1), got {}", p);
  if (!training || p == 0.0f) return x;
  // The mask is kept for backward as one byte an element (1: kept), in a
  // float tensor's storage: a quarter of a float mask's bytes to write here
  // and read back there.
  Tensor keep_storage = Tensor::empty(Shape{(x.value().numel() + 3) / 4});
  Tensor out = Tensor::empty(x.shape());
  dropout_apply(x.shape(), p, gen, batch_axis, x.value().data(), out.data(),
                reinterpret_cast<uint8_t*>(keep_storage.data()));
  const float scale = 1.0f / (1.0f - p);
  return tape().record("dropout", std::move(out), {x}, [keep_storage, scale](Node& n) {
    bool assign = false;
    Tensor* dx = n.input_grad(0, assign);
    if (!dx) return;
    const auto* k = reinterpret_cast<const uint8_t*>(keep_storage.data());
    const float* g = n.grad.data();
    float* d = dx->data();
    parallel_for(dx->numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
      if (assign)
        for (int64_t i = lo; i < hi; ++i) d[i] = g[i] * branchless_select(k[i] != 0, scale, 0.0f);
      else
        for (int64_t i = lo; i < hi; ++i) d[i] += g[i] * branchless_select(k[i] != 0, scale, 0.0f);
    });
  });
}

Var relu_dropout(const Var& x, float p, bool training, Generator& gen, int batch_axis) {
  check(x.defined(), "relu_dropout: undefined input");
  check(p >= 0.0f && p < 1.0f, "relu_dropout: probability must be in [0, 1), got {}", p);
  if (!training || p == 0.0f) return relu(x);
  Tensor out = Tensor::empty(x.shape());
  relu_dropout_apply(x.shape(), p, gen, batch_axis, x.value().data(), out.data());
  const float scale = 1.0f / (1.0f - p);
  return tape().record("relu_dropout", std::move(out), {x}, [scale](Node& n) {
    bool assign = false;
    Tensor* dx = n.input_grad(0, assign);
    if (!dx) return;
    const float *g = n.grad.data(), *y = n.value.data();
    float* d = dx->data();
    parallel_for(dx->numel(), kGrainElementwise, [&](int64_t lo, int64_t hi) {
      if (assign)
        for (int64_t i = lo; i < hi; ++i) d[i] = g[i] * branchless_select(y[i] > 0.0f, scale, 0.0f);
      else
        for (int64_t i = lo; i < hi; ++i) d[i] += g[i] * branchless_select(y[i] > 0.0f, scale, 0.0f);
    });
  });
}

}  // namespace rg
