#pragma once
// The arithmetic peak of this machine's cores, measured rather than read from
// a data sheet (the VM's clock under load is what the steps get).
//
// f32: independent chains of fused multiply-adds, acc ← acc·a + b, at the
// widest vector width the CPU has (AVX-512: 16 lanes, else AVX2: 8). An FMA
// has a latency of ~4 cycles and a core issues up to two a cycle, so at least
// 8 chains must be in flight; 16 (12 in AVX2's 16 registers) keep both units
// busy. Each FMA on a vector of L lanes is 2·L FLOPs.
//
// bf16: vdpbf16ps (AVX512-BF16) multiplies 32 pairs of bf16 numbers and adds
// them in pairs into 16 f32 accumulators: 64 FLOPs per instruction, the same
// issue rate as an FMA on paper, hence twice its FLOPs (measure: on some
// cores it issues half as often). It is what bf16 products run on without AMX.
//
// AMX (Sapphire Rapids and later): tile registers and a matrix unit; one
// tdpbf16ps is a 16 × 32 by 32 × 16 bf16 product into 16 × 16 f32 sums. This
// is what oneDNN's bf16 matmul and convolution use where the CPU has it.
//
// Every thread runs its own chains; the figure is all threads' FLOPs over the
// wall time of the slowest, best of a few tries.
#include <string>

namespace rg::bench {

struct PeakFlops {
  std::string f32_isa;   // "avx512", "avx2" or "scalar"
  double f32_gflops = 0;
  double bf16_gflops = 0;  // 0 where the CPU has no AVX512-BF16
  double amx_bf16_gflops = 0;  // AMX tiles' bf16 products; 0 where the CPU (or the kernel) has none
  double avx2_gflops = 0;  // f32 at AVX2's width (what OpenBLAS's Haswell kernels can reach); 0 without AVX2
};

PeakFlops measure_peak_flops(int threads, double seconds_per_try = 0.2);

}  // namespace rg::bench
