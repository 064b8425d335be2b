#!/usr/bin/env bash
# The paper's speed claim, both sides: every norm of one model fused (one
# kernel each) and composed from ops (as the paper's frameworks wrote them),
# timed against each other in ONE process by bench_norm_impl (interleaved
# rounds, the same batch, warm-up excluded; bench/step_timing.h), at each
# thread count. Prints the JSON lines, then a table: ms per step, the speedup
# against LayerNorm of the same implementation with its 95% interval, what
# fusing buys (composed ÷ fused), and the paper's speedup for the same model.
#
#   bench/norm_impl_table.sh rnnsearch [threads ...]        default threads: 1 2
#   PAIRS=20 bench/norm_impl_table.sh reader 1
#   SET="--set width=0.25" bench/norm_impl_table.sh convpool 1
#
# Models: rnnsearch, reader, order_embedding, convpool (bench/model_steps/).
# PAIRS (default 30) timed rounds; NORMS (default "none layernorm rmsnorm
# prmsnorm"); SET extra --set flags for the model's sizes; OUT a file that
# keeps the JSON lines (appended to).
set -euo pipefail
source "$(dirname "$0")/common.sh"
model=${1:?usage: bench/norm_impl_table.sh rnnsearch|reader|order_embedding|convpool [threads ...]}
shift
[ $# -gt 0 ] || set -- 1 2
lines=${OUT:-$lines}
build_bench bench_norm_impl
for t in "$@"; do
  # shellcheck disable=SC2086  # SET is a list of flags
  ours bench_norm_impl --model "$model" --impl fused,composed --threads "$t" --pairs "${PAIRS:-30}" \
    --norms "${NORMS:-none layernorm rmsnorm prmsnorm}" ${SET:-} | tee -a "$lines"
done
echo
python3 bench/norm_impl_table.py "$lines" --model "$model"
