#include "rmsgrad/core/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#ifdef RG_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#ifdef __AVX512BF16__
#include <immintrin.h>
#endif

#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>
#endif

#include "rmsgrad/core/error.h"
#include "rmsgrad/core/observer.h"
#include "rmsgrad/core/parallel.h"

namespace rg {

namespace {

GemmLibrary library_from_environment() {
  const char* name = std::getenv("RG_GEMM");
  if (name == nullptr || *name == '\0') return onednn_available() ? GemmLibrary::OneDNN : GemmLibrary::OpenBLAS;
  const GemmLibrary library = parse_gemm_library(name);
  check(library != GemmLibrary::OneDNN || onednn_available(),
        "RG_GEMM=onednn, but this build has no oneDNN (install libdnnl-dev and configure again)");
  return library;
}

GemmLibrary& chosen_library() {
  static GemmLibrary library = library_from_environment();
  return library;
}

int64_t& chosen_bf16_min_work() {
  static int64_t work = kBf16MinWork;
  return work;
}

Precision& chosen_precision() {
  static Precision precision = Precision::F32;
  return precision;
}

#ifdef RG_HAVE_ONEDNN
// ------------------------------------------------------- oneDNN's matmul
//
// Two kinds of product run on oneDNN's matmul primitive rather than its
// sgemm: bf16 products, and batches of small f32 products.
//
// bf16: C = alpha · op(A) · op(B) + beta · C with A and B rounded to bf16 (8
// bits of mantissa: round to nearest, ties to even) and the products summed
// in f32 (AMX or AVX512-BF16 where the CPU has them). A transposed operand is
// the same bf16 copy described with swapped strides.
//
// Batches: `batch` products of one shape (attention's, one per head and
// sentence) described as one 3-D product, [batch, M, K] · [batch, K, N], and
// run by one call. A call apiece costs more than the arithmetic of a product
// as small as 22 × 22 × 64 (BENCHMARKS.md, "Every model against its floor").
//
// One primitive per shape, batch, transposes, alpha, beta and input type,
// created once; each thread passes its own scratchpad, so gemm_batched's
// threads can run the same primitive at once.

// One float rounded to bf16: to nearest, ties to even; a NaN stays a (quiet)
// NaN; a subnormal float (below 2⁻¹²⁶) becomes a zero of its sign, as the
// CPU's own conversion below does.
inline uint16_t bf16_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0) bits &= 0x80000000u;
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even.
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? (bits >> 16) | 0x40u : rounded);
}

// The [rows, cols] block of a row-major matrix whose rows are `ld` floats
// apart, in bf16, rows one after another. Where the compiler may use
// AVX512-BF16, vcvtne2ps2bf16 converts 32 floats an instruction, the same
// numbers as bf16_bits: on an operand too large for the caches (an output
// layer's gradient), about twice the speed of the loop, which the memory
// bus then bounds.
void to_bf16(const float* in, int64_t ld, int64_t rows, int64_t cols, uint16_t* out) {
  parallel_for(rows * cols, kGrainElementwise, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi;) {
      const int64_t r = i / cols, c0 = i % cols, c1 = std::min(cols, c0 + (hi - i));
      const float* row = in + r * ld;
      uint16_t* dst = out + r * cols;
      int64_t c = c0;
#ifdef __AVX512BF16__
      for (; c + 32 <= c1; c += 32) {
        const __m512bh pair = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + c + 16), _mm512_loadu_ps(row + c));
        _mm512_storeu_si512(dst + c, reinterpret_cast<__m512i>(pair));
      }
#endif
#pragma omp simd
      for (int64_t j = c; j < c1; ++j) dst[j] = bf16_bits(row[j]);
      i += c1 - c0;
    }
  });
}

struct Matmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// At most kMatmulPrimitives are kept. A run whose batches vary in length (the
// Transformer's batches of tokens) meets new shapes every step; the least
// recently used primitive goes (a thread still running it holds it).
constexpr size_t kMatmulPrimitives = 256;

// B as stored, in bf16: [K, N], or [N, K] when transposed.
dnnl::memory::desc plain_b(bool trans_b, int64_t n, int64_t k) {
  using dnnl::memory;
  return memory::desc({k, n}, memory::data_type::bf16, trans_b ? memory::dims{1, k} : memory::dims{n, 1});
}

// The primitive for one kind of product. `bf16`: both inputs bf16, else f32.
// `packed_b`: B comes in the layout the primitive chooses (a cached weight).
// `inners` > 0: a grid of batch × inners products at the strides of a, b, c
// (gemm_grid); else `batch` products one after another.
struct MatmulKind {
  int64_t batch, m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
  bool bf16, packed_b;
  int64_t inners = 0;
  GridStrides a{}, b{}, c{};
  auto tied() const {
    return std::tie(batch, m, n, k, trans_a, trans_b, alpha, beta, bf16, packed_b, inners, a.outer, a.inner, a.ld,
                    b.outer, b.inner, b.ld, c.outer, c.inner, c.ld);
  }
  bool operator<(const MatmulKind& other) const { return tied() < other.tied(); }
};

std::shared_ptr<Matmul> matmul_for(const MatmulKind& kind) {
  struct Entry {
    std::shared_ptr<Matmul> matmul;
    uint64_t used = 0;
  };
  static std::mutex mutex;
  static std::map<MatmulKind, Entry> cache;
  static uint64_t clock = 0;
  std::lock_guard<std::mutex> lock(mutex);
  auto [entry, fresh] = cache.try_emplace(kind);
  entry->second.used = ++clock;
  if (!fresh) return entry->second.matmul;
  using dnnl::memory;
  const auto& [batch, m, n, k, trans_a, trans_b, alpha, beta, bf16, packed_b, inners, grid_a, grid_b, grid_c] = kind;
  const memory::data_type input = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  // A single product is 2-D; a batch adds a leading dimension, each matrix
  // right after the one before; a grid two, at its strides.
  auto desc = [&](int64_t rows, int64_t cols, memory::data_type type, bool transposed, const GridStrides& grid) {
    const int64_t ld = inners > 0 ? grid.ld : (transposed ? rows : cols);
    const memory::dims strides = transposed ? memory::dims{1, ld} : memory::dims{ld, 1};
    if (inners > 0) return memory::desc({batch, inners, rows, cols}, type, {grid.outer, grid.inner, strides[0], strides[1]});
    if (batch == 1) return memory::desc({rows, cols}, type, strides);
    return memory::desc({batch, rows, cols}, type, {rows * cols, strides[0], strides[1]});
  };
  const memory::desc a = desc(m, k, input, trans_a, grid_a);
  const memory::desc b = packed_b ? memory::desc({k, n}, memory::data_type::bf16, memory::format_tag::any)
                                  : desc(k, n, input, trans_b, grid_b);
  const memory::desc c = desc(m, n, memory::data_type::f32, false, grid_c);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops accumulate;
    accumulate.append_sum(beta);
    attr.set_post_ops(accumulate);
  }
  try {
    dnnl::matmul::primitive_desc pd({a, b, c}, attr, cpu_engine());
    entry->second.matmul = std::make_shared<Matmul>(Matmul{pd, dnnl::matmul(pd)});
  } catch (const dnnl::error& e) {
    cache.erase(entry);
    if (bf16) throw Error(fmt::format("gemm: oneDNN has no bf16 product on this CPU ({}); run with --precision f32", e.what()));
    throw Error(fmt::format("gemm: oneDNN has no product of {} [{}, {}] × [{}, {}] ({})", batch, m, k, k, n, e.what()));
  }
  if (cache.size() > kMatmulPrimitives)
    cache.erase(std::min_element(cache.begin(), cache.end(),
                                 [](const auto& x, const auto& y) { return x.second.used < y.second.used; }));
  return entry->second.matmul;
}

// A's bf16 copy is made kBf16BlockFloats at a time (blocks of rows of
// op(A), each one product), so that the copy of a large operand — the
// gradient of an 8,000-word output layer — adds a few MB, not its full size.
constexpr int64_t kBf16BlockFloats = int64_t{1} << 22;

// B as stored, rounded to bf16.
void b_to_bf16(bool trans_b, int64_t n, int64_t k, const float* b, uint16_t* out) {
  to_bf16(b, trans_b ? k : n, trans_b ? n : k, trans_b ? k : n, out);
}

}  // namespace

// ------------------------------------------------------------ weight cache

struct Bf16WeightCache::State {
  std::vector<std::span<const float>> weights;
  State* outer = nullptr;  // the cache this one hides, restored when it ends
  struct Packed {
    const float* b;
    bool trans_b;
    int64_t n, k;
    dnnl::memory::desc desc;
    dnnl::memory memory;  // owns its buffer
  };
  std::mutex mutex;  // gemm_batched's threads look up at once
  std::vector<Packed> packed;

  // Whether the `count` floats from b lie inside one weight.
  bool holds(const float* b, int64_t count) const {
    const auto at = reinterpret_cast<uintptr_t>(b);
    for (const std::span<const float>& w : weights) {
      const auto lo = reinterpret_cast<uintptr_t>(w.data()), hi = reinterpret_cast<uintptr_t>(w.data() + w.size());
      if (at >= lo && at + count * sizeof(float) <= hi) return true;
    }
    return false;
  }

  // B's bf16 copy in the layout `desc`, made at the first call for it.
  dnnl::memory packed_b(const float* b, bool trans_b, int64_t n, int64_t k, const dnnl::memory::desc& desc,
                        dnnl::stream& stream) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Packed& p : packed)
      if (p.b == b && p.trans_b == trans_b && p.n == n && p.k == k && p.desc == desc) return p.memory;
    std::vector<uint16_t> plain(k * n);
    b_to_bf16(trans_b, n, k, b, plain.data());
    dnnl::memory from(plain_b(trans_b, n, k), cpu_engine(), plain.data()), to(desc, cpu_engine());
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
    packed.push_back({b, trans_b, n, k, desc, to});
    return to;
  }
};

namespace {

Bf16WeightCache::State*& active_weight_cache() {
  static Bf16WeightCache::State* active = nullptr;
  return active;
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               const float* b, float beta, float* c) {
  thread_local std::vector<uint16_t> a16, b16;
  thread_local std::vector<char> scratchpad;
  Bf16WeightCache::State* cache = active_weight_cache();
  const bool cached = cache != nullptr && cache->holds(b, k * n);
  if (!cached) {
    b16.resize(k * n);
    b_to_bf16(trans_b, n, k, b, b16.data());
  }
  const int64_t block = std::min(m, std::max<int64_t>(16, kBf16BlockFloats / k / 16 * 16));
  a16.resize(block * k);
  using dnnl::memory;
  dnnl::engine& engine = cpu_engine();
  thread_local dnnl::stream stream(engine);
  for (int64_t r0 = 0; r0 < m; r0 += block) {
    const int64_t rows = std::min(block, m - r0);
    // Rows r0 .. r0 + rows of op(A): rows of A as stored, or its columns
    // when transposed, copied as the [K, rows] block they are there.
    if (trans_a) to_bf16(a + r0, m, k, rows, a16.data());
    else to_bf16(a + r0 * k, k, rows, k, a16.data());
    const std::shared_ptr<Matmul> held = matmul_for({.batch = 1, .m = rows, .n = n, .k = k, .trans_a = trans_a,
                                                     .trans_b = trans_b, .alpha = alpha, .beta = beta, .bf16 = true,
                                                     .packed_b = cached});
    const Matmul& mm = *held;
    const memory weights = cached ? cache->packed_b(b, trans_b, n, k, mm.pd.weights_desc(), stream)
                                  : memory(mm.pd.weights_desc(), engine, b16.data());
    scratchpad.resize(std::max(scratchpad.size(), mm.pd.scratchpad_desc().get_size()));
    mm.primitive.execute(stream, {{DNNL_ARG_SRC, memory(mm.pd.src_desc(), engine, a16.data())},
                                  {DNNL_ARG_WEIGHTS, weights},
                                  {DNNL_ARG_DST, memory(mm.pd.dst_desc(), engine, c + r0 * n)},
                                  {DNNL_ARG_SCRATCHPAD, memory(mm.pd.scratchpad_desc(), engine, scratchpad.data())}});
    stream.wait();
  }
}

// A batch or a grid of f32 products as one call (see the top of this section).
void gemm_batched_onednn(const MatmulKind& kind, const float* a, const float* b, float* c) {
  thread_local std::vector<char> scratchpad;
  dnnl::engine& engine = cpu_engine();
  thread_local dnnl::stream stream(engine);
  const std::shared_ptr<Matmul> held = matmul_for(kind);
  const Matmul& mm = *held;
  scratchpad.resize(std::max(scratchpad.size(), mm.pd.scratchpad_desc().get_size()));
  using dnnl::memory;
  mm.primitive.execute(stream, {{DNNL_ARG_SRC, memory(mm.pd.src_desc(), engine, const_cast<float*>(a))},
                                {DNNL_ARG_WEIGHTS, memory(mm.pd.weights_desc(), engine, const_cast<float*>(b))},
                                {DNNL_ARG_DST, memory(mm.pd.dst_desc(), engine, c)},
                                {DNNL_ARG_SCRATCHPAD, memory(mm.pd.scratchpad_desc(), engine, scratchpad.data())}});
  stream.wait();
}
#endif

void gemm_unobserved(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS leaves C untouched when K = 0; the math says C = beta·C.
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  const int64_t lda = trans_a ? m : k;
  const int64_t ldb = trans_b ? k : n;
#ifdef RG_HAVE_ONEDNN
  // oneDNN's threads are OpenMP's: every thread outside a parallel region,
  // one inside (gemm_batched's loop).
  if (m * n * k >= kOneDnnMinWork && chosen_library() == GemmLibrary::OneDNN) {
    if (chosen_precision() == Precision::BF16 && m * n * k >= chosen_bf16_min_work())
      return gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    const dnnl_status_t status =
        dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, n);
    check(status == dnnl_success, "gemm: oneDNN's sgemm failed (status {}) on [{}, {}] × [{}, {}]",
          static_cast<int>(status), m, k, k, n);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(n));
}

void gemm_batched_unobserved(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float* a, const float* b, float beta, float* c) {
  const int64_t sa = m * k, sb = k * n, sc = m * n;
  const int64_t flops_per_item = 2 * m * n * k;
#ifdef RG_HAVE_ONEDNN
  // On oneDNN a batch of f32 products is one call, its threads oneDNN's.
  const bool bf16_items = chosen_precision() == Precision::BF16 && m * n * k >= chosen_bf16_min_work();
  if (batch > 1 && !bf16_items && batch * m * n * k >= kOneDnnMinWork &&
      chosen_library() == GemmLibrary::OneDNN)
    return gemm_batched_onednn({.batch = batch, .m = m, .n = n, .k = k, .trans_a = trans_a, .trans_b = trans_b,
                                .alpha = alpha, .beta = beta, .bf16 = false, .packed_b = false},
                               a, b, c);
#endif
  // Small products, or many of them, run one per thread: no thread waits for
  // another inside a product. A few products of more than ~1 Mflop each, too
  // few to balance the threads, run one by one, each keeping every thread busy.
  const int threads = num_threads();
  if (batch == 1 || threads == 1 || (flops_per_item > (1 << 20) && batch < 4 * threads)) {
    for (int64_t i = 0; i < batch; ++i)
      gemm_unobserved(trans_a, trans_b, m, n, k, alpha, a + i * sa, b + i * sb, beta, c + i * sc);
    return;
  }
  BlasSerialScope serial;
  parallel_for(batch, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      gemm_unobserved(trans_a, trans_b, m, n, k, alpha, a + i * sa, b + i * sb, beta, c + i * sc);
  });
}

void gemm_grid_unobserved(int64_t outers, int64_t inners, bool trans_a, bool trans_b, int64_t m, int64_t n,
                          int64_t k, float alpha, const float* a, GridStrides sa, const float* b, GridStrides sb,
                          float beta, float* c, GridStrides sc) {
  const int64_t items = outers * inners;
  if (items == 0 || m == 0 || n == 0) return;
#ifdef RG_HAVE_ONEDNN
  if (k > 0 && items * m * n * k >= kOneDnnMinWork && chosen_library() == GemmLibrary::OneDNN)
    return gemm_batched_onednn({.batch = outers, .m = m, .n = n, .k = k, .trans_a = trans_a, .trans_b = trans_b,
                                .alpha = alpha, .beta = beta, .bf16 = false, .packed_b = false, .inners = inners,
                                .a = sa, .b = sb, .c = sc},
                               a, b, c);
#endif
  // On OpenBLAS one item per thread, each a call with its leading dimensions.
  BlasSerialScope serial;
  parallel_for(items, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t p = i / inners, q = i % inners;
      const float* ai = a + p * sa.outer + q * sa.inner;
      const float* bi = b + p * sb.outer + q * sb.inner;
      float* ci = c + p * sc.outer + q * sc.inner;
      if (k == 0) {  // BLAS leaves C untouched when K = 0; the math says C = beta·C.
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j) ci[r * sc.ld + j] = beta == 0.0f ? 0.0f : beta * ci[r * sc.ld + j];
        continue;
      }
      cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                  static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, ai, static_cast<int>(sa.ld),
                  bi, static_cast<int>(sb.ld), beta, ci, static_cast<int>(sc.ld));
    }
  });
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c) {
  Observer* observer = installed_observer();
  const GemmCall call{trans_a, trans_b, 1, m, n, k, beta != 0.0f};
  if (observer) observer->gemm_started(call);
  gemm_unobserved(trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
  if (observer) observer->gemm_finished(call);
}

void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, const float* b, float beta, float* c) {
  Observer* observer = installed_observer();
  const GemmCall call{trans_a, trans_b, batch, m, n, k, beta != 0.0f};
  if (observer) observer->gemm_started(call);
  gemm_batched_unobserved(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
  if (observer) observer->gemm_finished(call);
}

void gemm_grid(int64_t outers, int64_t inners, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const float* a, GridStrides sa, const float* b, GridStrides sb, float beta, float* c,
               GridStrides sc) {
  Observer* observer = installed_observer();
  const GemmCall call{trans_a, trans_b, outers * inners, m, n, k, beta != 0.0f};
  if (observer) observer->gemm_started(call);
  gemm_grid_unobserved(outers, inners, trans_a, trans_b, m, n, k, alpha, a, sa, b, sb, beta, c, sc);
  if (observer) observer->gemm_finished(call);
}

bool onednn_available() {
#ifdef RG_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

GemmLibrary gemm_library() { return chosen_library(); }

void set_gemm_library(GemmLibrary library) {
  check(library != GemmLibrary::OneDNN || onednn_available(),
        "set_gemm_library: this build has no oneDNN (install libdnnl-dev and configure again)");
  check(library == GemmLibrary::OneDNN || chosen_precision() == Precision::F32,
        "set_gemm_library: OpenBLAS has no bf16 products; set the precision to f32 first");
  chosen_library() = library;
}

Precision product_precision() { return chosen_precision(); }

int64_t bf16_min_work() { return chosen_bf16_min_work(); }

void set_bf16_min_work(int64_t multiply_adds) {
  check(multiply_adds >= 0, "set_bf16_min_work: {} multiply-adds; give 0 or more", multiply_adds);
  chosen_bf16_min_work() = multiply_adds;
}

bool bf16_products_supported() {
#ifdef RG_HAVE_ONEDNN
  // oneDNN answers by the instructions it finds: its bf16 kernels need
  // AVX-512 (or AMX); on an AVX2-only CPU no primitive descriptor exists.
  static const bool supported = [] {
    using dnnl::memory;
    const memory::desc a({16, 16}, memory::data_type::bf16, memory::dims{16, 1});
    const memory::desc c({16, 16}, memory::data_type::f32, memory::dims{16, 1});
    try {
      dnnl::matmul::primitive_desc pd({a, a, c}, cpu_engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return supported;
#else
  return false;
#endif
}

std::string product_precision_problem(Precision precision) {
  if (precision == Precision::F32) return {};
  if (!onednn_available() || gemm_library() != GemmLibrary::OneDNN)
    return fmt::format(
        "bf16 products need oneDNN ({}; install libdnnl-dev, configure again, and leave RG_GEMM unset or onednn)",
        onednn_available() ? "RG_GEMM chose OpenBLAS" : "this build has no oneDNN");
  if (!bf16_products_supported())
    return "bf16 products: oneDNN has no bf16 kernels for this CPU (they need AVX-512 or newer); run with --precision f32";
  return {};
}

void set_product_precision(Precision precision) {
  const std::string problem = product_precision_problem(precision);
  check(problem.empty(), "{}", problem);
  chosen_precision() = precision;
}

Precision parse_precision(std::string_view name) {
  if (name == "f32") return Precision::F32;
  if (name == "bf16") return Precision::BF16;
  throw Error(fmt::format("unknown precision '{}' (expected f32 or bf16)", name));
}

std::string_view precision_name(Precision precision) { return precision == Precision::BF16 ? "bf16" : "f32"; }

#ifdef RG_HAVE_ONEDNN
Bf16WeightCache::Bf16WeightCache(std::vector<std::span<const float>> weights) : state_(std::make_unique<State>()) {
  state_->weights = std::move(weights);
  state_->outer = active_weight_cache();
  active_weight_cache() = state_.get();
}

Bf16WeightCache::~Bf16WeightCache() { active_weight_cache() = state_->outer; }

int64_t Bf16WeightCache::packed_copies() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return static_cast<int64_t>(state_->packed.size());
}
#else
struct Bf16WeightCache::State {};
Bf16WeightCache::Bf16WeightCache(std::vector<std::span<const float>>) {}
Bf16WeightCache::~Bf16WeightCache() = default;
int64_t Bf16WeightCache::packed_copies() const { return 0; }
#endif

GemmLibrary parse_gemm_library(std::string_view name) {
  if (name == "openblas") return GemmLibrary::OpenBLAS;
  if (name == "onednn") return GemmLibrary::OneDNN;
  throw Error(fmt::format("RG_GEMM: unknown library '{}' (expected openblas or onednn)", name));
}

std::string_view gemm_library_name(GemmLibrary library) {
  return library == GemmLibrary::OneDNN ? "onednn" : "openblas";
}

}  // namespace rg
