#pragma once
// Matrix products. Transposed operands are passed as flags, never copied:
// op(A) is A or Aᵀ as stored row-major.
//
//   C[M, N] = alpha · op(A)[M, K] · op(B)[K, N] + beta · C[M, N]
//
// Two libraries compute them. OpenBLAS is always there. oneDNN (Debian's
// libdnnl-dev), when the build found it, runs every product of at least
// kOneDnnMinWork = 32³ multiply-adds (a batch's counted together): its
// kernels are picked by the CPU's features at run time (AVX-512 where the
// CPU has it), while Debian's OpenBLAS is told to use its AVX2 kernels
// (OPENBLAS_CORETYPE=Haswell) on CPUs newer than it knows. Smaller products
// stay on OpenBLAS, whose call costs less (BENCHMARKS.md, "Which library
// runs the products"). Both give the same products within float32 rounding
// (tests/test_gemm.cpp); each is deterministic for a given thread count.
//
// The environment variable RG_GEMM=openblas or RG_GEMM=onednn chooses for the
// whole program (read at the first product; onednn in a build without it is
// an error); set_gemm_library() chooses from code.
//
// Precision: f32 by default. With set_product_precision(Precision::BF16),
// every product oneDNN runs (and every convolution on its primitives) rounds
// its two inputs to bf16 and accumulates in f32, as PyTorch's autocast does
// on the CPU; the output stays f32, and so does everything that is not a
// product (the caller's weights, optimizer state, normalizations, softmax,
// losses). Products below bf16_min_work() multiply-adds stay f32 (on
// oneDNN, or OpenBLAS below kOneDnnMinWork): converting their inputs and
// starting a primitive costs more than bf16 saves (BENCHMARKS.md, "Which
// library runs the products"), and their FLOPs are few. The threshold is
// kBf16MinWork = 2²² by default, measured on AVX512-BF16 machines without
// AMX; set_bf16_min_work(n) sets it for the process (0: every product on
// oneDNN in bf16), for a machine where the crossing lies elsewhere. bf16 keeps f32's
// exponent range, so gradients need no loss scaling. It needs oneDNN (an
// rg::Error otherwise).
//
// An installed observer (core/observer.h) hears of every gemm, gemm_batched
// and gemm_grid call (a grid as a batch of outers·inners), on the thread
// that makes it.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rg {

// Leading dimensions are those of the matrices as stored (row-major), i.e.
// lda = K when A is [M, K] untransposed, lda = M when A is stored as [K, M].
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c);

// `batch` independent products with contiguous matrices one after another.
// On oneDNN an f32 batch is one batched call. Otherwise (OpenBLAS, or items
// large enough for bf16) small or many products run in parallel over the
// batch (one thread each); a few large ones (fewer than 4 per thread) run one
// by one, each on every thread.
void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, const float* b, float beta, float* c);

// A grid of products, outers × inners of them, whose matrices lie anywhere at
// regular strides: item (p, q) of an operand starts p·outer + q·inner floats
// in, and its rows (as stored) are `ld` apart. Multi-head attention reads
// each head's rows straight out of [B, T, heads·d] this way (outer T·heads·d,
// inner d, ld heads·d), where a batched product needed the heads copied out
// first. Always f32 (its items are small); on oneDNN one call.
struct GridStrides {
  int64_t outer, inner, ld;
};
void gemm_grid(int64_t outers, int64_t inners, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               float alpha, const float* a, GridStrides sa, const float* b, GridStrides sb, float beta, float* c,
               GridStrides sc);

enum class GemmLibrary { OpenBLAS, OneDNN };
inline constexpr int64_t kOneDnnMinWork = 32 * 32 * 32;
inline constexpr int64_t kBf16MinWork = int64_t{1} << 22;

bool onednn_available();          // built with oneDNN
GemmLibrary gemm_library();       // RG_GEMM, else oneDNN when available
void set_gemm_library(GemmLibrary library);  // OneDNN without it built in throws rg::Error
GemmLibrary parse_gemm_library(std::string_view name);  // "openblas" | "onednn"
std::string_view gemm_library_name(GemmLibrary library);

enum class Precision { F32, BF16 };
Precision product_precision();
void set_product_precision(Precision precision);  // BF16 needs oneDNN as the library, on a CPU it has bf16 for
std::string product_precision_problem(Precision precision);  // why set_product_precision would throw; "" when it would not
bool bf16_products_supported();  // oneDNN built in and it has a bf16 matmul for this CPU (AVX-512 or newer)
Precision parse_precision(std::string_view name);  // "f32" | "bf16"
int64_t bf16_min_work();                    // products with fewer multiply-adds stay f32 under BF16
void set_bf16_min_work(int64_t multiply_adds);  // ≥ 0; kBf16MinWork by default
std::string_view precision_name(Precision precision);

// Weights rounded to bf16 once per optimizer step, not at every product.
// While a Bf16WeightCache lives, a bf16 product whose B operand lies inside one
// of its weights reads a copy of that operand rounded to bf16 and packed in the
// layout oneDNN's kernel wants (pairs of K interleaved), made at the operand's
// first product and kept until the cache ends. Without it every product
// converts and packs its weights again: a recurrence does so at each time step,
// forward and backward. The rounding is the same either way.
//
// The weights must keep their values while the cache lives: open it before a
// step's forward pass and close it before the optimizer's update (the Trainer
// does, and a loop of one's own calls TrainingStep::open_weight_cache:
// train/training_step.h). Under f32 products it costs nothing. Caches nest,
// each closed before the one it hides; the innermost serves. Without oneDNN
// it holds nothing.
class Bf16WeightCache {
 public:
  explicit Bf16WeightCache(std::vector<std::span<const float>> weights);
  ~Bf16WeightCache();
  Bf16WeightCache(const Bf16WeightCache&) = delete;
  Bf16WeightCache& operator=(const Bf16WeightCache&) = delete;
  int64_t packed_copies() const;  // the bf16 copies made so far (one per weight and layout)

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace rg
