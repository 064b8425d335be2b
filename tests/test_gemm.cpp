// The two libraries behind gemm (core/gemm.h), OpenBLAS and oneDNN, give the
// same products within float32 rounding, for every transpose, for alpha and
// beta, for the batched form and across the size at which the choice between
// them switches.
//
// The bound: each library computes C_ij as a sum of K products in float32, so
// each is within γ_K·(|A||B|)_ij of the exact value (γ_K = K·u/(1 − K·u), u =
// 2⁻²⁴; Higham, Accuracy and Stability, §3.5), plus the rounding of alpha·(…)
// and of beta·C. The two then differ by at most twice that; the test takes
// 2·(K + 2)·u·((|alpha||A||B|)_ij + |beta·C_ij|), computed in double.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/gemm.h"
#include "rmsgrad/core/parallel.h"
#include "rmsgrad/core/random.h"

using namespace rg;

namespace {

struct Product {
  bool trans_a, trans_b;
  int64_t batch, m, n, k;
  float alpha, beta;
};

std::vector<float> uniform_values(int64_t count, Generator& gen) {
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = 2.0f * gen.uniform() - 1.0f;
  return v;
}

// C for the chosen library, from the same A, B and C.
std::vector<float> run(GemmLibrary library, const Product& p, const std::vector<float>& a,
                       const std::vector<float>& b, std::vector<float> c) {
  set_gemm_library(library);
  if (p.batch == 1) gemm(p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, a.data(), b.data(), p.beta, c.data());
  else gemm_batched(p.batch, p.trans_a, p.trans_b, p.m, p.n, p.k, p.alpha, a.data(), b.data(), p.beta, c.data());
  return c;
}

// |alpha|·(|op(A)||op(B)|)_ij + |beta·C_ij| for each element, in double.
std::vector<double> magnitudes(const Product& p, const std::vector<float>& a, const std::vector<float>& b,
                               const std::vector<float>& c) {
  std::vector<double> out(c.size());
  for (int64_t s = 0; s < p.batch; ++s)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double sum = 0.0;
        for (int64_t l = 0; l < p.k; ++l) {
          const float x = a[s * p.m * p.k + (p.trans_a ? l * p.m + i : i * p.k + l)];
          const float y = b[s * p.k * p.n + (p.trans_b ? j * p.k + l : l * p.n + j)];
          sum += std::fabs(static_cast<double>(x) * y);
        }
        const size_t at = static_cast<size_t>(s * p.m * p.n + i * p.n + j);
        out[at] = std::fabs(p.alpha) * sum + std::fabs(static_cast<double>(p.beta) * c[at]);
      }
  return out;
}

// Random A, B and C of a product, each value in [-1, 1).
struct Operands {
  std::vector<float> a, b, c;
};
Operands random_operands(const Product& p, Generator& gen) {
  return {uniform_values(p.batch * p.m * p.k, gen), uniform_values(p.batch * p.k * p.n, gen),
          uniform_values(p.batch * p.m * p.n, gen)};
}

// The largest |x − y| as a fraction of the bound of two f32 sums of the
// same terms in different orders, 2·(K + 2)·u·m (size: m per element).
double worst_of_f32_bound(const Product& p, const std::vector<float>& x, const std::vector<float>& y,
                          const std::vector<double>& size) {
  const double u = std::ldexp(1.0, -24);
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(x[i]) - y[i]) /
                                (2.0 * static_cast<double>(p.k + 2) * u * size[i]));
  return worst;
}

}  // namespace

TEST_CASE("OpenBLAS and oneDNN give the same products within float32 rounding") {
  if (!onednn_available()) {
    MESSAGE("skipped: this build has no oneDNN (libdnnl-dev); every product runs on OpenBLAS");
    CHECK_THROWS_AS(set_gemm_library(GemmLibrary::OneDNN), Error);
    return;
  }
  const GemmLibrary before = gemm_library();
  Generator gen(7);
  std::vector<Product> products;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      products.push_back({ta, tb, 1, 64, 48, 40, 1.0f, 0.0f});      // above the switch: oneDNN
      products.push_back({ta, tb, 1, 33, 17, 129, -0.5f, 1.0f});    // odd sizes, C accumulated
      products.push_back({ta, tb, 1, 4, 5, 6, 2.0f, 0.5f});         // below the switch: both OpenBLAS
      // Batches: one batched call on oneDNN, a product apiece on OpenBLAS.
      products.push_back({ta, tb, 12, 22, 22, 64, -0.5f, 1.0f});    // attention's, one per head and sentence
      products.push_back({ta, tb, 5, 17, 33, 9, 2.0f, 0.5f});       // odd sizes
    }
  products.push_back({false, true, 1, 300, 70, 256, 1.0f, 0.0f});   // the language model's head, in small
  products.push_back({false, false, 6, 40, 40, 24, 1.0f, 0.0f});    // batched: parallel over the batch on OpenBLAS
  products.push_back({true, false, 3, 128, 96, 80, 1.0f, 1.0f});    // batched: one by one, threaded on OpenBLAS
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Product& p : products) {
      CAPTURE(threads);
      CAPTURE(p.trans_a);
      CAPTURE(p.trans_b);
      CAPTURE(p.batch);
      CAPTURE(p.m);
      CAPTURE(p.n);
      CAPTURE(p.k);
      const auto [a, b, c] = random_operands(p, gen);
      const std::vector<float> blas = run(GemmLibrary::OpenBLAS, p, a, b, c);
      const std::vector<float> dnnl = run(GemmLibrary::OneDNN, p, a, b, c);
      CHECK(worst_of_f32_bound(p, blas, dnnl, magnitudes(p, a, b, c)) <= 1.0);
      // The same library twice gives the same bits.
      CHECK(run(GemmLibrary::OneDNN, p, a, b, c) == dnnl);
    }
  }
  set_num_threads(2);
  set_gemm_library(before);
}

TEST_CASE("the gemm library is chosen by name") {
  CHECK(parse_gemm_library("openblas") == GemmLibrary::OpenBLAS);
  CHECK(parse_gemm_library("onednn") == GemmLibrary::OneDNN);
  CHECK_THROWS_WITH_AS(parse_gemm_library("mkl"), doctest::Contains("unknown library 'mkl'"), Error);
  CHECK(gemm_library_name(GemmLibrary::OneDNN) == "onednn");
  if (std::getenv("RG_GEMM") == nullptr)  // the default: oneDNN where it is built in
    CHECK(gemm_library() == (onednn_available() ? GemmLibrary::OneDNN : GemmLibrary::OpenBLAS));
}

namespace {

// x rounded to the nearest bf16 (ties to even), as a float.
float bf16_rounded(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

}  // namespace

TEST_CASE("bf16 products: inputs rounded to bf16, sums in f32, every transpose, alpha, beta and batch") {
  if (!onednn_available()) {
    MESSAGE("skipped: this build has no oneDNN (libdnnl-dev), which bf16 products need");
    CHECK_THROWS_WITH_AS(set_product_precision(Precision::BF16), doctest::Contains("bf16 products need oneDNN"),
                         Error);
    return;
  }
  if (!bf16_products_supported()) {
    MESSAGE("skipped: oneDNN has no bf16 kernels for this CPU (they need AVX-512 or newer)");
    CHECK_THROWS_WITH_AS(set_product_precision(Precision::BF16), doctest::Contains("no bf16 kernels for this CPU"),
                         Error);
    return;
  }
  // Against f32 products of the same inputs: rounding a and b to bf16 (unit
  // roundoff 2⁻⁸) moves each term a·b by at most (2·2⁻⁸ + 2⁻¹⁶)|a||b|; both
  // sums then add f32 rounding within γ_K each (the bound of the test above).
  // So |bf16 − f32| ≤ (2⁻⁷ + 2⁻¹⁶)·m + 2·(K + 2)·u·m, m = |alpha||A||B| + |beta·C|.
  // And inputs that are already bf16 numbers make every term exact in f32,
  // so only the f32 bound is left: that checks the layouts (transposes) tightly.
  const GemmLibrary before = gemm_library();
  const double u = std::ldexp(1.0, -24);
  Generator gen(11);
  std::vector<Product> products;
  // Every product here has at least kBf16MinWork multiply-adds (smaller ones stay f32).
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      products.push_back({ta, tb, 1, 256, 160, 128, 1.0f, 0.0f});
      products.push_back({ta, tb, 1, 129, 257, 130, -0.5f, 1.0f});
    }
  products.push_back({false, false, 6, 160, 160, 164, 1.0f, 0.0f});  // batched, parallel over the batch
  products.push_back({true, false, 3, 256, 192, 96, 1.0f, 1.0f});    // batched, one by one
  // A's bf16 copy in blocks of rows (kBf16BlockFloats = 2²² floats): 2048 rows, then 52.
  products.push_back({false, false, 1, 2100, 24, 2048, 1.0f, 1.0f});
  products.push_back({true, true, 1, 2100, 24, 2048, 1.0f, 0.0f});
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Product& p : products)
      for (bool exact : {false, true}) {
        CAPTURE(threads);
        CAPTURE(p.trans_a);
        CAPTURE(p.trans_b);
        CAPTURE(p.m);
        CAPTURE(exact);
        std::vector<float> a = uniform_values(p.batch * p.m * p.k, gen);
        std::vector<float> b = uniform_values(p.batch * p.k * p.n, gen);
        const std::vector<float> c = uniform_values(p.batch * p.m * p.n, gen);
        if (exact)
          for (std::vector<float>* v : {&a, &b})
            for (float& x : *v) x = bf16_rounded(x);
        set_product_precision(Precision::F32);
        const std::vector<float> f32 = run(GemmLibrary::OpenBLAS, p, a, b, c);
        set_gemm_library(GemmLibrary::OneDNN);
        set_product_precision(Precision::BF16);
        const std::vector<float> bf16 = run(GemmLibrary::OneDNN, p, a, b, c);
        set_product_precision(Precision::F32);
        const std::vector<double> size = magnitudes(p, a, b, c);
        const double input_rounding = exact ? 0.0 : std::ldexp(1.0, -7) + std::ldexp(1.0, -16);
        double worst = 0.0, largest_difference = 0.0;
        for (size_t i = 0; i < c.size(); ++i) {
          const double bound = (input_rounding + 2.0 * static_cast<double>(p.k + 2) * u) * size[i];
          const double difference = std::fabs(static_cast<double>(f32[i]) - bf16[i]);
          worst = std::max(worst, difference / bound);
          largest_difference = std::max(largest_difference, difference / size[i]);
        }
        CHECK(worst <= 1.0);
        // Random inputs really are rounded: f32 products agree to ~1e-7 of m.
        if (!exact) CHECK(largest_difference > 1e-4);
      }
  }
  set_num_threads(2);
  set_gemm_library(before);
}

TEST_CASE("bf16 products: each input is rounded to nearest even, subnormals to zero, NaN kept") {
  if (!bf16_products_supported()) return;  // the case above says why
  // Row i of A holds one value, values[i mod 13] at column i mod 40, so that
  // every value falls in every column: in the part of a row converted 32 at a
  // time and in its tail. B is all ones, so C[i][j] is that value as rounded,
  // exactly.
  const GemmLibrary before = gemm_library();
  const int64_t min_work = bf16_min_work();
  set_gemm_library(GemmLibrary::OneDNN);
  set_bf16_min_work(0);
  const float tie_down = 1.0f + std::ldexp(1.0f, -8), tie_up = 1.0f + 3 * std::ldexp(1.0f, -8);
  const std::vector<float> values = {tie_down, -tie_down, tie_up, tie_down + std::ldexp(1.0f, -20),
                                     std::ldexp(1.0f, -130), -std::ldexp(1.0f, -130), std::ldexp(1.0f, -126),
                                     INFINITY, -INFINITY, NAN, 3.0e38f, 0.1f, -7.3f};
  REQUIRE(values.size() == 13);
  const int64_t m = 13 * 40, n = 16, k = 40;
  std::vector<float> a(m * k, 0.0f), b(k * n, 1.0f), c(m * n, 0.0f);
  for (int64_t i = 0; i < m; ++i) a[i * k + i % k] = values[i % values.size()];
  set_product_precision(Precision::BF16);
  gemm(false, false, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data());
  set_product_precision(Precision::F32);
  for (int64_t i = 0; i < m; ++i) {
    const float v = values[i % values.size()];
    const float expected = std::fpclassify(v) == FP_SUBNORMAL ? 0.0f : bf16_rounded(v);
    bool as_rounded = true;
    for (int64_t j = 0; j < n; ++j)
      as_rounded = as_rounded && (std::isnan(v) ? std::isnan(c[i * n + j]) : c[i * n + j] == expected);
    CAPTURE(i);
    CAPTURE(v);
    CHECK(as_rounded);
  }
  CHECK(bf16_rounded(tie_down) == 1.0f);
  CHECK(bf16_rounded(tie_up) == 1.0f + std::ldexp(1.0f, -6));
  set_bf16_min_work(min_work);
  set_gemm_library(before);
}

TEST_CASE("bf16 products: a cached weight is rounded and packed once and gives each product's own result") {
  if (!bf16_products_supported()) return;  // the case above says why
  // A cached B and a B converted at the product are the same bf16 numbers;
  // only the order of the f32 sums may differ (oneDNN's kernel reads a packed
  // B in its own blocking), so the two agree within twice the f32 bound of
  // the first case, 2·(K + 2)·u·m, whatever the inputs.
  const GemmLibrary before = gemm_library();
  set_gemm_library(GemmLibrary::OneDNN);
  Generator gen(13);
  std::vector<Product> products;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) products.push_back({ta, tb, 1, 80, 768, 256, 1.0f, 0.0f});  // a GRU's gates
  products.push_back({false, false, 1, 129, 257, 130, -0.5f, 1.0f});
  products.push_back({false, true, 4, 160, 160, 164, 1.0f, 0.0f});  // batched: four weights
  products.push_back({false, false, 1, 2100, 24, 2048, 1.0f, 1.0f});  // A in blocks of rows: two primitives
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Product& p : products) {
      CAPTURE(threads);
      CAPTURE(p.trans_a);
      CAPTURE(p.trans_b);
      CAPTURE(p.m);
      const auto [a, b, c] = random_operands(p, gen);
      set_product_precision(Precision::BF16);
      const std::vector<float> converted = run(GemmLibrary::OneDNN, p, a, b, c);
      std::vector<float> cached, again;
      {
        Bf16WeightCache weights({std::span<const float>(b)});
        cached = run(GemmLibrary::OneDNN, p, a, b, c);
        const int64_t copies = weights.packed_copies();
        CHECK(copies >= p.batch);  // one per weight, per layout oneDNN asked for
        again = run(GemmLibrary::OneDNN, p, a, b, c);
        CHECK(weights.packed_copies() == copies);  // the second product packs nothing
        Bf16WeightCache inner({std::span<const float>(c)});  // caches nest; b is not one of these weights
        CHECK(run(GemmLibrary::OneDNN, p, a, b, c) == converted);
        CHECK(inner.packed_copies() == 0);
      }
      set_product_precision(Precision::F32);
      CHECK(again == cached);
      CHECK(worst_of_f32_bound(p, cached, converted, magnitudes(p, a, b, c)) <= 1.0);
    }
  }
  set_num_threads(2);
  set_gemm_library(before);
}

TEST_CASE("bf16 products: a product below kBf16MinWork stays f32, bit for bit") {
  if (!bf16_products_supported()) return;  // the case above says why
  const GemmLibrary before = gemm_library();
  set_gemm_library(GemmLibrary::OneDNN);
  Generator gen(12);
  // 2¹⁸ multiply-adds; and a batch whose items are small though the batch is not.
  const std::vector<Product> products = {{false, true, 1, 64, 64, 64, 1.0f, 0.0f},
                                         {false, true, 744, 22, 22, 64, 1.0f, 0.0f}};
  for (const Product& p : products) {
    CAPTURE(p.batch);
    REQUIRE(p.m * p.n * p.k < kBf16MinWork);
    const auto [a, b, c] = random_operands(p, gen);
    const std::vector<float> f32 = run(GemmLibrary::OneDNN, p, a, b, c);
    set_product_precision(Precision::BF16);
    const std::vector<float> bf16 = run(GemmLibrary::OneDNN, p, a, b, c);
    set_product_precision(Precision::F32);
    CHECK(bf16 == f32);
  }
  set_gemm_library(before);
}

TEST_CASE("bf16 products: the precision is chosen by name and needs oneDNN as the library") {
  CHECK(parse_precision("bf16") == Precision::BF16);
  CHECK(parse_precision("f32") == Precision::F32);
  CHECK_THROWS_WITH_AS(parse_precision("fp16"), doctest::Contains("unknown precision 'fp16'"), Error);
  CHECK(product_precision() == Precision::F32);  // the default
  if (!onednn_available()) return;
  const GemmLibrary before = gemm_library();
  set_gemm_library(GemmLibrary::OpenBLAS);
  CHECK_THROWS_WITH_AS(set_product_precision(Precision::BF16), doctest::Contains("RG_GEMM chose OpenBLAS"), Error);
  set_gemm_library(before);
}

TEST_CASE("a grid of products at strides: each item its own product, nothing between items touched") {
  const GemmLibrary before = gemm_library();
  std::vector<GemmLibrary> libraries{GemmLibrary::OpenBLAS};
  if (onednn_available()) libraries.push_back(GemmLibrary::OneDNN);
  Generator gen(11);
  // Each operand's items side by side in its rows, as heads in [B, T, H·d],
  // with 3 floats of gap after each row: item (p, q) starts at
  // p·rows·ld + q·cols, rows ld = inners·cols + 3 apart.
  struct Grid {
    int64_t outers, inners, m, n, k;
  };
  auto layout = [](const Grid& g, int64_t rows, int64_t cols) {
    const int64_t ld = g.inners * cols + 3;
    return GridStrides{.outer = rows * ld, .inner = cols, .ld = ld};
  };
  for (const GemmLibrary library : libraries)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (const Grid& g : {Grid{3, 4, 7, 5, 6}, Grid{2, 4, 22, 22, 64}, Grid{2, 3, 22, 64, 22}}) {
          CAPTURE(gemm_library_name(library));
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(g.m);
          const int64_t a_rows = ta ? g.k : g.m, a_cols = ta ? g.m : g.k;
          const int64_t b_rows = tb ? g.n : g.k, b_cols = tb ? g.k : g.n;
          const GridStrides sa = layout(g, a_rows, a_cols), sb = layout(g, b_rows, b_cols), sc = layout(g, g.m, g.n);
          const std::vector<float> a = uniform_values(g.outers * sa.outer, gen), b = uniform_values(g.outers * sb.outer, gen),
                                   c = uniform_values(g.outers * sc.outer, gen);
          std::vector<float> got = c;
          set_gemm_library(library);
          gemm_grid(g.outers, g.inners, ta, tb, g.m, g.n, g.k, -0.5f, a.data(), sa, b.data(), sb, 1.0f, got.data(), sc);
          // Each item copied out and multiplied alone on OpenBLAS.
          set_gemm_library(GemmLibrary::OpenBLAS);
          std::vector<bool> inside(c.size(), false);
          double worst = 0.0;
          for (int64_t p = 0; p < g.outers; ++p)
            for (int64_t q = 0; q < g.inners; ++q) {
              auto gather = [p, q](const std::vector<float>& x, GridStrides s, int64_t rows, int64_t cols) {
                std::vector<float> out(rows * cols);
                for (int64_t r = 0; r < rows; ++r)
                  for (int64_t j = 0; j < cols; ++j) out[r * cols + j] = x[p * s.outer + q * s.inner + r * s.ld + j];
                return out;
              };
              const Product item{ta, tb, 1, g.m, g.n, g.k, -0.5f, 1.0f};
              const std::vector<float> ai = gather(a, sa, a_rows, a_cols), bi = gather(b, sb, b_rows, b_cols),
                                       ci = gather(c, sc, g.m, g.n);
              const std::vector<float> alone = run(GemmLibrary::OpenBLAS, item, ai, bi, ci);
              const std::vector<float> mine = gather(got, sc, g.m, g.n);
              worst = std::max(worst, worst_of_f32_bound(item, alone, mine, magnitudes(item, ai, bi, ci)));
              for (int64_t r = 0; r < g.m; ++r)
                for (int64_t j = 0; j < g.n; ++j) inside[p * sc.outer + q * sc.inner + r * sc.ld + j] = true;
            }
          CHECK(worst <= 1.0);
          int64_t touched = 0;
          for (size_t i = 0; i < c.size(); ++i) touched += !inside[i] && std::memcmp(&got[i], &c[i], sizeof(float)) != 0;
          CHECK(touched == 0);
        }
  set_gemm_library(before);
}
