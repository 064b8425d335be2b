#!/usr/bin/env bash
# Two cores, two ways: each model's training step at 1 process × 2 threads
# (the whole batch) against 2 processes × 1 thread (half the batch each, the
# gradients summed in buckets while backward runs), in the same run, RMSNorm,
# at the benchmark sizes of bench/model_steps/. Prints one table: ms per step
# each way, their ratio, and for the 2-process step the communication left
# after backward (exposed), the same sums timed alone, and the fraction hidden.
#
#   bench/bench_data_parallel.sh            # MODELS="convpool rnnsearch reader order_embedding transformer"
#
# mpirun binds each process to a core (--bind-to core, its default for 2);
# as root, OMPI_ALLOW_RUN_AS_ROOT* are set here.
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_bench bench_step
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
steps=${STEPS:-5}
warmup=${WARMUP:-2}
# model → the examples of its benchmark batch (bench/model_steps/)
declare -A batch=([convpool]=100 [rnnsearch]=80 [reader]=64 [order_embedding]=128 [transformer]=186)
for model in ${MODELS:-convpool rnnsearch reader order_embedding transformer}; do
  half=$(( ${batch[$model]} / 2 ))
  "$build/bin/bench_step" --model "$model" --norm rmsnorm --threads 2 --steps "$steps" --warmup "$warmup" \
    | tee -a "$lines"
  mpirun -np 2 --bind-to core "$build/bin/bench_step" --model "$model" --norm rmsnorm --threads 1 \
    --steps "$steps" --warmup "$warmup" --set batch="$half" | tee -a "$lines"
done
python3 - "$lines" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\n| model | 1 process × 2 threads ms | 2 processes × 1 thread ms | 2p ÷ 1p | exposed comm ms | comm alone ms | hidden |")
print("|---|---|---|---|---|---|---|")
for one, two in zip(rows[0::2], rows[1::2]):
    print(f"| {one['model']} | {one['ms_per_step']:.0f} | {two['ms_per_step']:.0f} | "
          f"{two['ms_per_step'] / one['ms_per_step']:.2f} | {two['exposed_comm_ms']:.1f} | "
          f"{two['comm_alone_ms']:.1f} | {100 * two['hidden_fraction']:.0f}% |")
PY
