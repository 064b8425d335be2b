#!/usr/bin/env bash
# Polite when shared: every model's 2-thread training step alone and beside one
# competing single-threaded process (a busy loop), in interleaved rounds, then
# the ratio shared ÷ alone per model. The competitor takes one of the two
# cores, so a step that splits its work evenly between two threads can take
# at most about twice as long; much more means threads wait for each other
# at barriers while one of them is not running.
#
#   bench/bench_shared.sh                 # MODELS, ROUNDS=2, STEPS=3, WARMUP=1, NORM=layernorm
#   OMP_WAIT_POLICY=passive bench/bench_shared.sh   # libgomp's waiting threads sleep instead of spinning
#
# Each model at its benchmark sizes (bench/model_steps).
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_bench bench_step
for _ in $(seq "${ROUNDS:-2}"); do
  for model in ${MODELS:-convpool order_embedding reader rnnsearch transformer}; do
    alone_and_shared "" ours bench_step --model "$model" --norm "${NORM:-layernorm}" --threads 2 \
      --steps "${STEPS:-3}" --warmup "${WARMUP:-1}"
  done
done
echo
/usr/bin/python3 bench/alone_shared_table.py "$lines" model "2 threads alone ms" "beside one busy process ms" 0
