// Convolution and pooling: values and every gradient against PyTorch
// (tests/reference/make_conv_refs.py), gradient checks, the weight-normed
// Conv2d and its data-dependent init, Conv1d and its torch-default init,
// AvgPool2d, and the error messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "rmsgrad/core/gemm.h"
#include "rmsgrad/rmsgrad.h"
#include "test_util.h"

using namespace rg;

namespace {

// float32 sums of at most a few hundred O(1) products: the rounding error is
// a few ulp times √terms, well under 1e-5 relative to the larger terms; 1e-4
// absolute plus 1e-4 relative leaves room for cancellation in small results.
constexpr float kAtol = 1e-4f, kRtol = 1e-4f;

Var run_case(const nlohmann::json& c, const Var& x, std::vector<std::pair<std::string, Var>>& params) {
  const std::string kind = c["kind"];
  if (kind == "max_pool2d") return max_pool2d(x, c["kernel"].get<int64_t>(), c["stride"].get<int64_t>());
  if (kind == "global_avg_pool") return global_avg_pool(x);
  if (kind == "avg_pool2d")
    return avg_pool2d(x, c["kernel"].get<int64_t>(), c["stride"].get<int64_t>(), c["padding"].get<int64_t>());
  auto find = [&](const char* name) {
    for (auto& [n, v] : params)
      if (n == name) return v;
    return Var();
  };
  Var weight = c["weight_norm"].get<bool>() ? weight_norm(find("weight_v"), find("weight_g")) : find("weight");
  auto conv = kind == "conv1d" ? conv1d : conv2d;
  return conv(x, weight, find("bias"), c["stride"].get<int64_t>(), c["padding"].get<int64_t>());
}

}  // namespace

TEST_CASE("conv2d, conv1d, max_pool2d, avg_pool2d and global_avg_pool match PyTorch, values and gradients") {
  nlohmann::json ref = test::load_reference("conv.json");
  REQUIRE(ref["cases"].size() >= 18);
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"];
    CAPTURE(name);
    for (int threads : {1, 2}) {
      CAPTURE(threads);
      set_num_threads(threads);
      Var x = parameter(test::tensor_from_json(c["x"]));
      std::vector<std::pair<std::string, Var>> params;
      for (const auto& [n, p] : c["params"].items()) params.emplace_back(n, parameter(test::tensor_from_json(p)));
      Var y = run_case(c, x, params);
      tape().backward(y, test::tensor_from_json(c["projection"]));  // L = Σ y ⊙ r
      test::all_close(y.value(), test::tensor_from_json(c["output"]), kAtol, kRtol, name + " output");
      test::all_close(x.grad(), test::tensor_from_json(c["grad_x"]), kAtol, kRtol, name + " grad x");
      for (auto& [n, p] : params)
        test::all_close(p.grad(), test::tensor_from_json(c["grad_params"][n]), kAtol, kRtol, name + " grad " + n);
      tape().clear();
    }
  }
  set_num_threads(2);
}

TEST_CASE("conv2d passes gradient checks: kernels 1 and 3, strides 1 and 2, padding 0 and 1, odd sizes") {
  Generator gen(11);
  struct Case {
    int64_t n, c, h, w, o, k, stride, pad;
    bool bias;
  };
  for (const Case& k : {Case{2, 3, 5, 4, 2, 3, 1, 1, true}, Case{1, 2, 6, 5, 3, 3, 2, 0, false},
                        Case{2, 3, 3, 5, 4, 1, 1, 0, true}, Case{2, 2, 5, 5, 2, 3, 2, 1, true},
                        Case{3, 4, 2, 3, 2, 1, 2, 0, false}}) {
    CAPTURE(k.k);
    CAPTURE(k.stride);
    CAPTURE(k.pad);
    std::vector<Tensor> inputs = {normal(Shape{k.n, k.c, k.h, k.w}, 0.0f, 1.0f, gen),
                                  normal(Shape{k.o, k.c, k.k, k.k}, 0.0f, 0.5f, gen)};
    if (k.bias) inputs.push_back(normal(Shape{k.o}, 0.0f, 0.5f, gen));
    GradCheckResult r = gradcheck(
        [&](const std::vector<Var>& v) { return conv2d(v[0], v[1], k.bias ? v[2] : Var(), k.stride, k.pad); }, inputs);
    CHECK_MESSAGE(r.ok, r.report);
  }
}

TEST_CASE("conv1d passes gradient checks: kernels 1, 3 and 4, strides 1 to 3, padding 0 to 2") {
  Generator gen(15);
  struct Case {
    int64_t n, c, l, o, k, stride, pad;
    bool bias;
  };
  for (const Case& k : {Case{2, 3, 7, 2, 3, 1, 1, true}, Case{1, 2, 9, 3, 4, 3, 2, false},
                        Case{3, 4, 5, 2, 1, 1, 0, true}, Case{2, 2, 8, 3, 3, 2, 0, true}}) {
    CAPTURE(k.k);
    CAPTURE(k.stride);
    CAPTURE(k.pad);
    std::vector<Tensor> inputs = {normal(Shape{k.n, k.c, k.l}, 0.0f, 1.0f, gen),
                                  normal(Shape{k.o, k.c, k.k}, 0.0f, 0.5f, gen)};
    if (k.bias) inputs.push_back(normal(Shape{k.o}, 0.0f, 0.5f, gen));
    GradCheckResult r = gradcheck(
        [&](const std::vector<Var>& v) { return conv1d(v[0], v[1], k.bias ? v[2] : Var(), k.stride, k.pad); }, inputs);
    CHECK_MESSAGE(r.ok, r.report);
  }
}

TEST_CASE("conv1d is conv2d on [N, C, 1, L] maps, to the bit") {
  // Without padding the two run the same geometry through the same kernels,
  // so values and gradients agree exactly. (With padding conv2d would also pad
  // the height; the PyTorch cases cover conv1d's padding.)
  Generator gen(16);
  for (int64_t stride : {1, 2}) {
    Var x = parameter(normal(Shape{5, 3, 20}, 0.0f, 1.0f, gen));
    Var w = parameter(normal(Shape{4, 3, 3}, 0.0f, 0.5f, gen));
    Var b = parameter(normal(Shape{4}, 0.0f, 0.5f, gen));
    Var y1 = conv1d(x, w, b, stride);
    const Tensor r = normal(y1.shape(), 0.0f, 1.0f, gen);
    tape().backward(y1, r);
    const std::vector<Tensor> one = {y1.value().clone(), x.grad().clone(), w.grad().clone(), b.grad().clone()};
    for (const Var* v : {&x, &w, &b}) v->node()->grad = Tensor();
    Var y2 = conv2d(reshape(x, {5, 3, 1, 20}), reshape(w, {4, 3, 1, 3}), b, stride);
    tape().backward(y2, r.reshape(y2.shape()));
    tape().clear();
    CHECK(max_abs_diff(one[0], y2.value().reshape(one[0].shape())) == 0.0f);
    CHECK(max_abs_diff(one[1], x.grad()) == 0.0f);
    CHECK(max_abs_diff(one[2], w.grad()) == 0.0f);
    CHECK(max_abs_diff(one[3], b.grad()) == 0.0f);
  }
}

TEST_CASE("conv2d: a batch gives what each sample gives alone (grouped, single and pointwise GEMMs)") {
  // Small maps are multiplied several samples per GEMM, large ones one sample
  // per GEMM; a batch of one always takes the single path. Comparing a batch
  // with its samples run one at a time checks the grouping's scatter and
  // gather, values and all three gradients. Only the order of float32 sums
  // differs (dW and db add up to 5 samples × 36 positions × 27 products of
  // O(1) terms), so 1e-5 absolute plus relative is a few ulp times √terms.
  Generator gen(21);
  struct Case {
    int64_t n, c, h, w, o, k, pad;
  };
  for (const Case& k : {Case{5, 3, 6, 6, 4, 3, 1},      // P = 36: 8 samples per GEMM
                        Case{7, 4, 5, 5, 3, 1, 0},      // pointwise, P = 25: grouped copies
                        Case{3, 2, 16, 16, 3, 3, 1},    // P = 256: one sample per GEMM
                        Case{2, 3, 16, 17, 2, 1, 0}}) { // pointwise, large: no copy
    CAPTURE(k.h);
    CAPTURE(k.k);
    Var x = parameter(normal(Shape{k.n, k.c, k.h, k.w}, 0.0f, 1.0f, gen));
    Var w = parameter(normal(Shape{k.o, k.c, k.k, k.k}, 0.0f, 0.5f, gen));
    Var b = parameter(normal(Shape{k.o}, 0.0f, 0.5f, gen));
    const int64_t side_h = k.h + 2 * k.pad - k.k + 1, side_w = k.w + 2 * k.pad - k.k + 1;
    Var r = constant(normal(Shape{k.n, k.o, side_h, side_w}, 0.0f, 1.0f, gen));

    auto grads = [&](const Var& y) {
      for (const Var* v : {&x, &w, &b}) v->node()->grad = Tensor();
      sum(y * r).backward();
      std::vector<Tensor> g = {y.value().clone(), x.grad().clone(), w.grad().clone(), b.grad().clone()};
      tape().clear();
      return g;
    };
    std::vector<Tensor> batched = grads(conv2d(x, w, b, 1, k.pad));
    std::vector<Var> samples;
    for (int64_t i = 0; i < k.n; ++i) samples.push_back(conv2d(slice(x, 0, i, i + 1), w, b, 1, k.pad));
    std::vector<Tensor> alone = grads(concat(samples, 0));
    const char* what[] = {"y", "dx", "dw", "db"};
    for (int i = 0; i < 4; ++i) CHECK(test::all_close(batched[i], alone[i], 1e-5f, 1e-5f, what[i]));
  }
}

namespace {

// Every value rounded to the nearest bf16 (ties to even).
Tensor bf16_rounded(Tensor t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &t.data()[i], sizeof bits);
    bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&t.data()[i], &bits, sizeof bits);
  }
  return t;
}

}  // namespace

TEST_CASE("oneDNN's convolutions and the im2col path agree within float32 rounding, assigned and accumulated") {
  if (!onednn_available()) {
    MESSAGE("skipped: this build has no oneDNN (libdnnl-dev); every convolution runs on im2col + OpenBLAS");
    return;
  }
  if (!bf16_products_supported())
    MESSAGE("bf16 cases skipped: oneDNN has no bf16 kernels for this CPU (AVX-512 or newer)");
  // Each output or gradient element is a float32 sum of T terms, computed in
  // some order by each path: each is within γ_T·m of the exact sum (Higham
  // §3.5), where m is the same sum of absolute values, so the two differ by
  // at most 2·T·u·m (u = 2⁻²⁴); accumulating into a gradient already there
  // adds one rounding of it. m is the same computation on |x|, |w|, |b| and
  // |r| (every term's magnitude, summed), done on the im2col path.
  // T: C·kh·kw + 1 terms in y, O·kh·kw in dx, N·Ho·Wo in dw and db.
  // Under bf16 products the inputs are first rounded to bf16 numbers: the
  // bf16 path's own rounding of them is then exact, and so is each product of
  // two of them in f32 (8 + 8 significant bits), so the same bound holds.
  const GemmLibrary before = gemm_library();
  const double u = std::ldexp(1.0, -24);
  Generator gen(33);
  struct Case {
    int64_t n, c, h, w, o, k, stride, pad;
    bool conv1, bias, accumulate;
  };
  // Kernels wider than 1×1 on inputs of 16 channels or more run on oneDNN's
  // primitives, the others on im2col with oneDNN's GEMM (autograd/conv.cpp);
  // both are compared here.
  for (const Case& k : {Case{4, 3, 9, 9, 5, 3, 1, 1, false, true, false},     // the first layer's shape: im2col
                        Case{3, 16, 8, 8, 32, 3, 2, 1, false, true, true},    // strided, blocked channels
                        Case{2, 24, 6, 6, 20, 1, 1, 0, false, false, true},   // pointwise, no bias: im2col
                        Case{2, 24, 6, 6, 20, 1, 2, 0, false, false, true},   // 1×1, stride 2: primitives
                        Case{3, 20, 1, 17, 8, 4, 1, 2, true, true, false},    // conv1d
                        Case{2, 17, 7, 5, 3, 3, 3, 0, false, true, true},     // stride 3, rectangular, 17 channels
                        Case{2, 5, 7, 5, 3, 3, 3, 0, false, true, true}}) {   // the same on 5 channels: im2col
    for (int threads : {1, 2})
    for (Precision precision : {Precision::F32, Precision::BF16}) {
      if (precision == Precision::BF16 && !bf16_products_supported()) continue;  // said once above
      CAPTURE(k.c);
      CAPTURE(precision_name(precision));
      CAPTURE(k.stride);
      CAPTURE(k.conv1);
      CAPTURE(k.accumulate);
      CAPTURE(threads);
      set_num_threads(threads);
      const Shape xs = k.conv1 ? Shape{k.n, k.c, k.w} : Shape{k.n, k.c, k.h, k.w};
      const Shape ws = k.conv1 ? Shape{k.o, k.c, k.k} : Shape{k.o, k.c, k.k, k.k};
      const Tensor x0 = bf16_rounded(normal(xs, 0.0f, 1.0f, gen)), w0 = bf16_rounded(normal(ws, 0.0f, 0.5f, gen));
      const Tensor b0 = normal(Shape{k.o}, 0.0f, 0.5f, gen);
      const int64_t ho = k.conv1 ? 1 : (k.h + 2 * k.pad - k.k) / k.stride + 1;
      const int64_t wo = (k.w + 2 * k.pad - k.k) / k.stride + 1;
      const Tensor r0 = bf16_rounded(normal(k.conv1 ? Shape{k.n, k.o, wo} : Shape{k.n, k.o, ho, wo}, 0.0f, 1.0f, gen));
      const Tensor s0 = normal(xs, 0.0f, 1.0f, gen), t0 = normal(ws, 0.0f, 1.0f, gen);
      // y, dx, dw, db on one library. With `accumulate`, x and w also feed
      // ops recorded after the convolution, whose backward runs first, so the
      // convolution's gradients are added to ones already there.
      auto run = [&](GemmLibrary library, bool absolute) {
        set_product_precision(Precision::F32);
        set_gemm_library(library);
        if (library == GemmLibrary::OneDNN) set_product_precision(precision);
        auto value = [&](const Tensor& t) { return absolute ? abs(constant(t)).value().clone() : t.clone(); };
        Var x = parameter(value(x0)), w = parameter(value(w0)), b = parameter(value(b0));
        Var y = k.conv1 ? conv1d(x, w, k.bias ? b : Var(), k.stride, k.pad)
                        : conv2d(x, w, k.bias ? b : Var(), k.stride, k.pad);
        Var loss = sum(y * constant(value(r0)));
        if (k.accumulate) loss = loss + sum(x * constant(value(s0))) + sum(w * constant(value(t0)));
        loss.backward();
        std::vector<Tensor> out{y.value().clone(), x.grad().clone(), w.grad().clone()};
        if (k.bias) out.push_back(b.grad().clone());
        tape().clear();
        set_product_precision(Precision::F32);
        return out;
      };
      const std::vector<Tensor> blas = run(GemmLibrary::OpenBLAS, false);
      const std::vector<Tensor> dnnl = run(GemmLibrary::OneDNN, false);
      const std::vector<Tensor> size = run(GemmLibrary::OpenBLAS, true);
      const double terms[] = {static_cast<double>(k.c * k.k * (k.conv1 ? 1 : k.k) + 1),
                              static_cast<double>(k.o * k.k * (k.conv1 ? 1 : k.k)),
                              static_cast<double>(k.n * ho * wo), static_cast<double>(k.n * ho * wo)};
      const char* what[] = {"y", "dx", "dw", "db"};
      for (size_t i = 0; i < blas.size(); ++i) {
        CAPTURE(what[i]);
        REQUIRE(blas[i].shape() == dnnl[i].shape());
        double worst = 0.0;  // the largest difference as a fraction of its bound
        for (int64_t j = 0; j < blas[i].numel(); ++j) {
          const double bound = 2.0 * (terms[i] + 2) * u * size[i].data()[j];
          worst = std::max(worst, std::fabs(static_cast<double>(blas[i].data()[j]) - dnnl[i].data()[j]) / bound);
        }
        CHECK(worst <= 1.0);
      }
      // The same library twice gives the same bits.
      const std::vector<Tensor> again = run(GemmLibrary::OneDNN, false);
      for (size_t i = 0; i < again.size(); ++i)
        CHECK(std::equal(again[i].data(), again[i].data() + again[i].numel(), dnnl[i].data()));
    }
  }
  set_num_threads(2);
  set_gemm_library(before);
}

TEST_CASE("pooling passes gradient checks") {
  Generator gen(12);
  // Values spaced 1/48 apart in random order: every window's maximum leads the
  // runner-up by far more than the step h = 1e-3, so no finite difference
  // crosses a kink.
  std::vector<float> spaced(48);
  for (int i = 0; i < 48; ++i) spaced[i] = static_cast<float>(i) / 48.0f;
  for (int i = 47; i > 0; --i) std::swap(spaced[i], spaced[gen.randint(i + 1)]);
  Tensor x = Tensor::from(Shape{2, 2, 4, 3}, spaced);
  GradCheckResult max_r = gradcheck([](const std::vector<Var>& v) { return max_pool2d(v[0], 2, 1); }, {x});
  CHECK_MESSAGE(max_r.ok, max_r.report);
  GradCheckResult avg_r = gradcheck([](const std::vector<Var>& v) { return global_avg_pool(v[0]); },
                                    {normal(Shape{2, 3, 3, 5}, 0.0f, 1.0f, gen)});
  CHECK_MESSAGE(avg_r.ok, avg_r.report);
  // Average pooling is linear: any inputs. Overlapping windows, and padding
  // up to kernel/2 (windows that are partly, or at kernel 2 and padding 1
  // three-quarters, outside the image).
  struct Case {
    int64_t h, w, k, stride, pad;
  };
  for (const Case& k : {Case{4, 5, 2, 2, 0}, Case{5, 4, 3, 1, 0}, Case{5, 6, 3, 2, 1}, Case{3, 4, 2, 1, 1}}) {
    CAPTURE(k.k);
    CAPTURE(k.pad);
    GradCheckResult r = gradcheck([&](const std::vector<Var>& v) { return avg_pool2d(v[0], k.k, k.stride, k.pad); },
                                  {normal(Shape{2, 2, k.h, k.w}, 0.0f, 1.0f, gen)});
    CHECK_MESSAGE(r.ok, r.report);
  }
}

TEST_CASE("Conv1d: names and shapes, torch's initial values, weight norm, AvgPool2d") {
  // torch.nn.Conv1d draws W from kaiming_uniform_(a = √5) and b from
  // U(±1/√fan_in); conv.json holds both bounds as torch computes them. With
  // 128·64·5 = 40960 weights the largest |w| is within 0.1% of the bound
  // unless all fall short, probability 0.999^40960 ≈ e^−41; the variance of
  // U(±a) is a²/3, and a sample's variance has a relative standard error of
  // √(0.8/n) = 0.44%, so 2% is 4.5 of them. The 128 biases: the largest is
  // above 0.9·bound but with probability 0.9^128 ≈ 1e−6.
  const nlohmann::json init = test::load_reference("conv.json")["conv1d_init"];
  const int64_t in = init["in"], out = init["out"], kernel = init["kernel"];
  const double weight_bound = init["weight_bound"], bias_bound = init["bias_bound"];
  Generator gen(17);
  Conv1d conv(in, out, kernel, gen);
  CHECK(conv.weight.shape() == Shape{out, in, kernel});
  double biggest = 0.0, sum_sq = 0.0;
  for (float v : conv.weight.value().span()) {
    biggest = std::max(biggest, static_cast<double>(std::fabs(v)));
    sum_sq += static_cast<double>(v) * v;
  }
  CHECK(biggest <= weight_bound);
  CHECK(biggest > 0.999 * weight_bound);
  CHECK(sum_sq / static_cast<double>(conv.weight.numel()) ==
        doctest::Approx(weight_bound * weight_bound / 3.0).epsilon(0.02));
  double biggest_bias = 0.0;
  for (float v : conv.bias.value().span()) biggest_bias = std::max(biggest_bias, static_cast<double>(std::fabs(v)));
  CHECK(biggest_bias <= bias_bound);
  CHECK(biggest_bias > 0.9 * bias_bound);

  std::vector<std::string> names;
  for (const auto& [n, p] : conv.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"weight", "bias"});
  Var y = conv(constant(normal(Shape{2, in, 11}, 0.0f, 1.0f, gen)));
  CHECK(y.shape() == Shape{2, out, 7});
  tape().clear();

  Conv1d strided(3, 4, 3, gen, Conv1dOptions{.stride = 2, .padding = 1, .bias = false, .weight_norm = true});
  names.clear();
  for (const auto& [n, p] : strided.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"weight_v", "weight_g"});
  // W = g v/‖v‖ with g = ‖v‖ is v itself.
  CHECK(max_abs_diff(strided.effective_weight().value(), strided.weight_v.value()) < 1e-6f);
  CHECK(strided(constant(normal(Shape{2, 3, 9}, 0.0f, 1.0f, gen))).shape() == Shape{2, 4, 5});  // (9 + 2 − 3)/2 + 1
  tape().clear();

  AvgPool2d pool(3, 2, 1);
  Var x = constant(normal(Shape{2, 3, 7, 6}, 0.0f, 1.0f, gen));
  Var pooled = pool(x);
  CHECK(pooled.shape() == Shape{2, 3, 4, 3});
  CHECK(max_abs_diff(pooled.value(), avg_pool2d(x, 3, 2, 1).value()) == 0.0f);
  tape().clear();
}

TEST_CASE("Conv2d: parameter names, weight norm starting at the plain weight, gradient check") {
  Generator gen(13);
  Conv2d plain(3, 4, 3, gen, Conv2dOptions{.padding = 1});
  Conv2d normed(3, 4, 3, gen, Conv2dOptions{.padding = 1, .bias = false, .weight_norm = true});
  std::vector<std::string> names;
  for (const auto& [n, p] : plain.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"weight", "bias"});
  names.clear();
  for (const auto& [n, p] : normed.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"weight_v", "weight_g"});
  // W = g v/‖v‖ with g = ‖v‖ is v itself.
  CHECK(max_abs_diff(normed.effective_weight().value(), normed.weight_v.value()) < 1e-6f);
  Var y = normed(constant(normal(Shape{2, 3, 5, 5}, 0.0f, 1.0f, gen)));
  CHECK(y.shape() == Shape{2, 4, 5, 5});
  tape().clear();

  GradCheckResult r = gradcheck(
      [](const std::vector<Var>& v) { return conv2d(v[0], weight_norm(v[1], v[2]), v[3], 1, 1); },
      {normal(Shape{2, 2, 4, 4}, 0.0f, 1.0f, gen), normal(Shape{3, 2, 3, 3}, 0.0f, 0.5f, gen),
       uniform(Shape{3}, 0.5f, 1.5f, gen), normal(Shape{3}, 0.0f, 0.5f, gen)});
  CHECK_MESSAGE(r.ok, r.report);
}

TEST_CASE("Conv2d's data-dependent init gives each channel mean 0 and variance 1 on the batch") {
  Generator gen(14);
  const WeightInit init{.kind = WeightInitKind::Normal, .stddev = 0.05f};
  Conv2d conv(3, 5, 3, gen, Conv2dOptions{.padding = 1, .weight_norm = true, .init = init});
  Var x = constant(normal(Shape{6, 3, 7, 7}, 0.5f, 2.0f, gen));  // off-centre, not unit scale
  conv.init_from_batch(x);
  NoGradGuard no_grad;
  Tensor y = conv(x).value();
  const int64_t per = 7 * 7;
  for (int64_t o = 0; o < 5; ++o) {
    double s = 0.0, sq = 0.0;
    for (int64_t n = 0; n < 6; ++n)
      for (int64_t q = 0; q < per; ++q) {
        const double v = y.data()[(n * 5 + o) * per + q];
        s += v;
        sq += v * v;
      }
    const double count = 6.0 * per, mean = s / count;
    CHECK(std::fabs(mean) < 1e-4);                      // float32 rounding of O(1) values
    CHECK(std::fabs(sq / count - mean * mean - 1.0) < 1e-3);
  }
  Conv2d plain(3, 5, 3, gen);
  CHECK_THROWS_WITH_AS(plain.init_from_batch(x), doctest::Contains("needs weight_norm"), Error);
}

TEST_CASE("conv and pooling errors name the op and the shapes") {
  Var x = constant(Tensor::zeros(Shape{2, 3, 5, 5}));
  CHECK_THROWS_WITH_AS(conv2d(x, constant(Tensor::zeros(Shape{4, 2, 3, 3})), Var()),
                       doctest::Contains("conv2d: input [2, 3, 5, 5] has 3 channels but weight [4, 2, 3, 3]"), Error);
  CHECK_THROWS_WITH_AS(conv2d(constant(Tensor::zeros(Shape{3, 5, 5})), constant(Tensor::zeros(Shape{4, 3, 3, 3})),
                              Var()),
                       doctest::Contains("conv2d: input must be [N, C, H, W], got [3, 5, 5]"), Error);
  CHECK_THROWS_WITH_AS(conv2d(x, constant(Tensor::zeros(Shape{4, 3, 7, 7})), Var()),
                       doctest::Contains("larger than the padded input"), Error);
  CHECK_THROWS_WITH_AS(conv2d(x, constant(Tensor::zeros(Shape{4, 3, 3, 3})), constant(Tensor::zeros(Shape{3}))),
                       doctest::Contains("conv2d: bias [3] must be [4]"), Error);
  CHECK_THROWS_WITH_AS(conv2d(x, constant(Tensor::zeros(Shape{4, 3, 3, 3})), Var(), 0), doctest::Contains("stride"),
                       Error);
  CHECK_THROWS_WITH_AS(max_pool2d(x, 6, 1), doctest::Contains("max_pool2d: kernel 6 is larger than the input"), Error);
  CHECK_THROWS_WITH_AS(global_avg_pool(constant(Tensor::zeros(Shape{2, 3}))),
                       doctest::Contains("global_avg_pool: input must be [N, C, H, W], got [2, 3]"), Error);
  CHECK_THROWS_WITH_AS(avg_pool2d(constant(Tensor::zeros(Shape{3, 5, 5})), 2, 2),
                       doctest::Contains("avg_pool2d: input must be [N, C, H, W], got [3, 5, 5]"), Error);
  CHECK_THROWS_WITH_AS(avg_pool2d(x, 6, 1),
                       doctest::Contains("avg_pool2d: kernel 6 is larger than the padded input [2, 3, 5, 5]"),
                       Error);
  CHECK_THROWS_WITH_AS(avg_pool2d(x, 3, 1, 2),
                       doctest::Contains("avg_pool2d: padding must be in [0, kernel/2], got padding 2 kernel 3"),
                       Error);
  CHECK_THROWS_WITH_AS(avg_pool2d(x, 2, 0), doctest::Contains("avg_pool2d: kernel and stride must be ≥ 1"), Error);

  Var seq = constant(Tensor::zeros(Shape{2, 3, 6}));
  CHECK_THROWS_WITH_AS(conv1d(x, constant(Tensor::zeros(Shape{4, 3, 3})), Var()),
                       doctest::Contains("conv1d: input must be [N, C, L], got [2, 3, 5, 5]"), Error);
  CHECK_THROWS_WITH_AS(conv1d(seq, constant(Tensor::zeros(Shape{4, 3, 3, 3})), Var()),
                       doctest::Contains("conv1d: weight must be [O, C, k], got [4, 3, 3, 3]"), Error);
  CHECK_THROWS_WITH_AS(conv1d(seq, constant(Tensor::zeros(Shape{4, 2, 3})), Var()),
                       doctest::Contains("conv1d: input [2, 3, 6] has 3 channels but weight [4, 2, 3] expects 2"),
                       Error);
  CHECK_THROWS_WITH_AS(conv1d(seq, constant(Tensor::zeros(Shape{4, 3, 9})), Var(), 1, 1),
                       doctest::Contains("conv1d: kernel 9 is larger than the padded input [2, 3, 6] (padding 1)"),
                       Error);
  CHECK_THROWS_WITH_AS(conv1d(seq, constant(Tensor::zeros(Shape{4, 3, 3})), constant(Tensor::zeros(Shape{3}))),
                       doctest::Contains("conv1d: bias [3] must be [4]"), Error);
  Generator gen(1);
  Conv2d conv(3, 4, 3, gen);
  CHECK_THROWS_WITH_AS(conv(constant(Tensor::zeros(Shape{2, 5, 8, 8}))), doctest::Contains("Conv2d(3 → 4, 3×3)"),
                       Error);
  Conv1d conv_1d(3, 4, 3, gen);
  CHECK_THROWS_WITH_AS(conv_1d(constant(Tensor::zeros(Shape{2, 5, 8}))),
                       doctest::Contains("Conv1d(3 → 4, 3): input must be [N, 3, L], got [2, 5, 8]"), Error);
  CHECK_THROWS_WITH_AS(AvgPool2d(2, 2, 2), doctest::Contains("AvgPool2d: padding must be in [0, kernel/2]"), Error);
}
