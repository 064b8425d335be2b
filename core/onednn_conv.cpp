#include "rmsgrad/core/onednn_conv.h"

#include "rmsgrad/core/error.h"

#ifdef RG_HAVE_ONEDNN

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/observer.h"

namespace rg {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Kind = dnnl::prop_kind;

dnnl::engine& cpu() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The three primitives of one geometry, their descriptors, and our layouts.
struct ConvPrimitives {
  memory::desc x, weight, bias, y;  // NCHW, OIHW, O, NCHW
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_forward forward_with_bias, forward_without_bias;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_backward_weights backward_weights;

  // bf16: x, the weight and dy enter the primitives rounded to bf16 (their
  // reorders convert); y and every gradient come out f32.
  ConvPrimitives(const ConvDims& d, bool bf16)
      : x({d.n, d.c, d.h, d.w}, memory::data_type::f32, Tag::nchw),
        weight({d.o, d.c, d.kh, d.kw}, memory::data_type::f32, Tag::oihw),
        bias({d.o}, memory::data_type::f32, Tag::x),
        y({d.n, d.o, d.ho, d.wo}, memory::data_type::f32, Tag::nchw) {
    // `any`: the primitive chooses the layouts it runs fastest on.
    const auto in_type = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    const memory::desc x_any({d.n, d.c, d.h, d.w}, in_type, Tag::any);
    const memory::desc w_any({d.o, d.c, d.kh, d.kw}, in_type, Tag::any);
    const memory::desc y_any({d.n, d.o, d.ho, d.wo}, memory::data_type::f32, Tag::any);
    const memory::desc dx_any({d.n, d.c, d.h, d.w}, memory::data_type::f32, Tag::any);
    const memory::desc dw_any({d.o, d.c, d.kh, d.kw}, memory::data_type::f32, Tag::any);
    const memory::desc dy_any({d.n, d.o, d.ho, d.wo}, in_type, Tag::any);
    const memory::dims strides{d.stride, d.stride}, padding{d.pad_h, d.pad_w};
    const auto direct = dnnl::algorithm::convolution_direct;
    dnnl::engine& engine = cpu();
    forward_pd = {{Kind::forward_training, direct, x_any, w_any, bias, y_any, strides, padding, padding}, engine};
    forward_with_bias = dnnl::convolution_forward(forward_pd);
    // The same layouts without a bias, for a layer that has none.
    const dnnl::convolution_forward::primitive_desc no_bias_pd{
        {Kind::forward_training, direct, forward_pd.src_desc(), forward_pd.weights_desc(), forward_pd.dst_desc(),
         strides, padding, padding},
        engine};
    forward_without_bias = dnnl::convolution_forward(no_bias_pd);
    data_pd = {{direct, dx_any, w_any, dy_any, strides, padding, padding}, engine, forward_pd};
    backward_data = dnnl::convolution_backward_data(data_pd);
    weights_pd = {{direct, x_any, dw_any, bias, dy_any, strides, padding, padding}, engine, forward_pd};
    backward_weights = dnnl::convolution_backward_weights(weights_pd);
  }
};

ConvPrimitives& primitives_for(const ConvDims& d) {
  static std::mutex mutex;
  static std::map<
      std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>,
      std::unique_ptr<ConvPrimitives>>
      cache;
  const bool bf16 = product_precision() == Precision::BF16;
  std::lock_guard<std::mutex> lock(mutex);
  auto& entry = cache[{d.n, d.c, d.h, d.w, d.o, d.kh, d.kw, d.stride, d.pad_h, d.pad_w, bf16}];
  if (!entry) {
    try {
      entry = std::make_unique<ConvPrimitives>(d, bf16);
    } catch (const dnnl::error& e) {
      throw Error(fmt::format("conv: oneDNN has no {} convolution of [{}, {}, {}, {}] by [{}, {}, {}, {}] here ({})",
                              bf16 ? "bf16" : "f32", d.n, d.c, d.h, d.w, d.o, d.c, d.kh, d.kw, e.what()));
    }
  }
  return *entry;
}

// Working memory for the layouts the primitives run on: one buffer per role
// and thread, kept and grown, never given back. It stays outside the tensor
// allocator on purpose: the blocked layouts' padded sizes match no tensor's,
// and as cached blocks they pushed ConvPool-CNN-C's cycle of sizes past the
// cache's bound (core/allocator.h), so that every step mapped 23 blocks afresh.
class Workspace {
 public:
  float* get(size_t bytes) {
    const size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
    if (floats > size_) {
      data_.reset(new float[floats]);  // uninitialised: every use overwrites it
      size_ = floats;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<float[]> data_;
  size_t size_ = 0;
};

enum Role { kInput, kWeight, kOutput, kInputGrad, kWeightGrad, kBiasGrad, kRoles };
thread_local Workspace workspace[kRoles];

// Memory for a primitive's operand in layout `want`. Where our layout is
// already `want`, our buffer itself; else the role's workspace, filled from
// ours when `fill` is set.
memory in_layout(const memory::desc& ours, const float* data, const memory::desc& want, Role role,
                 dnnl::stream& stream, bool fill = true) {
  memory user(ours, cpu(), const_cast<float*>(data));
  if (want == ours) return user;
  memory converted(want, cpu(), workspace[role].get(want.get_size()));
  if (fill) dnnl::reorder(user, converted).execute(stream, user, converted);
  return converted;
}

// ours ← result (assign) or ours += result, converting the layout as it goes.
void out_of_layout(memory result, const memory::desc& ours, float* data, bool assign, dnnl::stream& stream) {
  memory user(ours, cpu(), data);
  if (assign && result.get_data_handle() == data) return;  // written in place
  dnnl::primitive_attr attr;
  if (!assign) {
    dnnl::post_ops add;
    add.append_sum(1.0f);
    attr.set_post_ops(add);
  }
  dnnl::reorder(dnnl::reorder::primitive_desc(result, user, attr)).execute(stream, result, user);
}

}  // namespace

namespace {

// Tells the installed observer of one call (core/observer.h).
class ConvNotice {
 public:
  explicit ConvNotice(const ConvCall& call) : observer_(installed_observer()), call_(call) {
    if (observer_) observer_->conv_started(call_);
  }
  ~ConvNotice() {
    if (observer_) observer_->conv_finished(call_);
  }
  ConvNotice(const ConvNotice&) = delete;
  ConvNotice& operator=(const ConvNotice&) = delete;

 private:
  Observer* observer_;
  ConvCall call_;
};

}  // namespace

void onednn_conv_forward(const ConvDims& d, const float* x, const float* weight, const float* bias, float* y) {
  ConvNotice notice({d, true, false, false});
  ConvPrimitives& p = primitives_for(d);
  dnnl::stream stream(cpu());
  memory x_mem = in_layout(p.x, x, p.forward_pd.src_desc(), kInput, stream);
  memory w_mem = in_layout(p.weight, weight, p.forward_pd.weights_desc(), kWeight, stream);
  memory y_mem = in_layout(p.y, y, p.forward_pd.dst_desc(), kOutput, stream, false);
  if (bias) {
    memory b_mem(p.bias, cpu(), const_cast<float*>(bias));
    p.forward_with_bias.execute(
        stream, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_BIAS, b_mem}, {DNNL_ARG_DST, y_mem}});
  } else {
    p.forward_without_bias.execute(stream, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, y_mem}});
  }
  out_of_layout(y_mem, p.y, y, true, stream);
  stream.wait();
}

void onednn_conv_backward(const ConvDims& d, const float* x, const float* weight, const float* dy,
                          const ConvGradients& grads) {
  ConvNotice notice({d, false, grads.dx != nullptr, grads.dw != nullptr || grads.db != nullptr});
  ConvPrimitives& p = primitives_for(d);
  dnnl::stream stream(cpu());
  if (grads.dx) {
    memory dy_mem = in_layout(p.y, dy, p.data_pd.diff_dst_desc(), kOutput, stream);
    memory w_mem = in_layout(p.weight, weight, p.data_pd.weights_desc(), kWeight, stream);
    // Written in place only when it may overwrite dx in our layout.
    const bool in_place = grads.assign_dx && p.data_pd.diff_src_desc() == p.x;
    memory dx_mem = in_place ? memory(p.x, cpu(), grads.dx)
                             : memory(p.data_pd.diff_src_desc(), cpu(),
                                      workspace[kInputGrad].get(p.data_pd.diff_src_desc().get_size()));
    p.backward_data.execute(stream,
                            {{DNNL_ARG_DIFF_DST, dy_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DIFF_SRC, dx_mem}});
    out_of_layout(dx_mem, p.x, grads.dx, grads.assign_dx, stream);
  }
  if (grads.dw || grads.db) {
    memory dy_mem = in_layout(p.y, dy, p.weights_pd.diff_dst_desc(), kOutput, stream);
    memory x_mem = in_layout(p.x, x, p.weights_pd.src_desc(), kInput, stream);
    // oneDNN computes both; one not wanted is dropped.
    memory dw_mem(p.weights_pd.diff_weights_desc(), cpu(),
                  workspace[kWeightGrad].get(p.weights_pd.diff_weights_desc().get_size()));
    float* db = workspace[kBiasGrad].get(d.o * sizeof(float));
    memory db_mem(p.bias, cpu(), db);
    p.backward_weights.execute(stream, {{DNNL_ARG_DIFF_DST, dy_mem},
                                        {DNNL_ARG_SRC, x_mem},
                                        {DNNL_ARG_DIFF_WEIGHTS, dw_mem},
                                        {DNNL_ARG_DIFF_BIAS, db_mem}});
    if (grads.dw) out_of_layout(dw_mem, p.weight, grads.dw, grads.assign_dw, stream);
    stream.wait();
    if (grads.db)
      for (int64_t o = 0; o < d.o; ++o) grads.db[o] = grads.assign_db ? db[o] : grads.db[o] + db[o];
  }
  stream.wait();
}

}  // namespace rg

#else  // built without oneDNN: autograd/conv.cpp never calls these

namespace rg {

void onednn_conv_forward(const ConvDims&, const float*, const float*, const float*, float*) {
  throw Error("convolution on oneDNN: this build has no oneDNN");
}

void onednn_conv_backward(const ConvDims&, const float*, const float*, const float*, const ConvGradients&) {
  throw Error("convolution on oneDNN: this build has no oneDNN");
}

}  // namespace rg

#endif
