#pragma once
// Convolutions on oneDNN: forward, backward-data and backward-weights as
// oneDNN's own primitives, which run directly on blocked layouts (channels
// in blocks of 16, one AVX-512 register) with no im2col.
//
// Our tensors stay NCHW (and weights OIHW). Each primitive is asked for the
// layouts it runs fastest on; inputs are reordered into them and results
// back out (a pass over the data, small beside the convolution's work), so
// nothing outside this file sees a blocked layout. The primitives of one
// geometry are created once and cached.
//
// Under bf16 products (core/gemm.h: set_product_precision) the input, the
// weight and dy enter the primitives in bf16; y and the gradients are f32.
//
// autograd/conv.cpp calls these, when the product library is oneDNN
// (core/gemm.h: RG_GEMM=onednn, the default where it is built in), for the
// convolutions they run faster: kernels wider than 1×1 on inputs of at least
// 16 channels. Its im2col + GEMM path is the reference, and the tests hold
// the two equal within float32 rounding.
#include <cstdint>

namespace rg {

struct ConvDims {
  int64_t n, c, h, w;            // input [N, C, H, W]
  int64_t o, kh, kw;             // weight [O, C, kh, kw]
  int64_t stride, pad_h, pad_w;  // zero padding on both sides of each axis
  int64_t ho, wo;                // output [N, O, Ho, Wo]
};

// y = conv(x, weight) + bias (bias may be null).
void onednn_conv_forward(const ConvDims& d, const float* x, const float* weight, const float* bias, float* y);

// The gradients of the forward above from dy [N, O, Ho, Wo]. Each of dx, dw,
// db may be null (not wanted); each is overwritten when its assign flag is
// set, else added to.
struct ConvGradients {
  float* dx = nullptr;
  bool assign_dx = false;
  float* dw = nullptr;
  bool assign_dw = false;
  float* db = nullptr;
  bool assign_db = false;
};
void onednn_conv_backward(const ConvDims& d, const float* x, const float* weight, const float* dy,
                          const ConvGradients& grads);

}  // namespace rg
