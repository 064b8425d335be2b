#!/usr/bin/env bash
# One training step of the LLaMA-style character language model at the lm driver's recipe (4 blocks,
# d 256, 4 heads, SwiGLU 688, untied embeddings, 77 symbols, 32 windows of 128 characters, Adam β (0.9,
# 0.95), clip 1), ours against the same model in PyTorch (bench/lm_torch.py: nn.RMSNorm,
# scaled_dot_product_attention), eager and under torch.compile, with each norm in every block, at 1 and
# 2 threads, in the same run.
# ROUNDS (default 2) interleaved rounds, median of the rounds' medians; COMPILE=0 leaves out the
# torch.compile column. BUILD_DIR (default build) picks the build tree, configured by scripts/build.sh
# when it is the default.
#
#   bench/bench_lm.sh          # THREADS="1 2" NORMS="none layernorm rmsnorm prmsnorm" ROUNDS=2 STEPS=5 WARMUP=2
#
# That both compute the same model: bench_step --model lm --dump DIR --norm N, then
# lm_torch.py --check DIR (float64; the tolerances are argued in lm_torch.py).
set -euo pipefail
source "$(dirname "$0")/common.sh"
steps=(--steps "${STEPS:-5}" --warmup "${WARMUP:-2}")
build_bench bench_step
for _ in $(seq "${ROUNDS:-2}"); do
  for t in ${THREADS:-1 2}; do
    for norm in ${NORMS:-none layernorm rmsnorm prmsnorm}; do
      ours bench_step --model lm --norm "$norm" --threads "$t" "${steps[@]}" | tee -a "$lines"
      twin "$t" lm_torch.py --norm "$norm" "${steps[@]}" | tee -a "$lines"
      if [ "${COMPILE:-1}" = 1 ]; then
        twin "$t" lm_torch.py --compile --norm "$norm" "${steps[@]}" | tee -a "$lines"
      fi
    done
  done
done
echo
/usr/bin/python3 bench/model_step_table.py "$lines"
