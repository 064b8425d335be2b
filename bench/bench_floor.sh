#!/usr/bin/env bash
# Every model's training step against its floor — its matrix products run
# alone (build/bin/bench_floor) — at 1 and 2 threads, with the rest of the
# step broken down by kind, then the table (bench/floor_table.py): step ÷
# floor, the 2-thread speedup of the step beside that of its products, and
# where the rest goes.
#
#   bench/bench_floor.sh      # MODELS, THREADS="1 2", PRECISIONS=f32, ROUNDS=2, NORM=layernorm, STEPS=3, WARMUP=1
#
# PRECISIONS="f32 bf16" times each step with its products in bf16 too
# (--precision), against the bf16 floors.
#
# The thread counts take turns model by model, ROUNDS times over (the
# machine's speed drifts; both configurations see the same drift), and the
# table takes the median of the rounds. Each model at its benchmark sizes
# (bench/model_steps).
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_bench bench_floor
for _ in $(seq "${ROUNDS:-2}"); do
  for model in ${MODELS:-convpool order_embedding reader rnnsearch transformer lm}; do
    for t in ${THREADS:-1 2}; do
      for precision in ${PRECISIONS:-f32}; do
        ours bench_floor --model "$model" --norm "${NORM:-layernorm}" --threads "$t" --steps "${STEPS:-3}" \
          --warmup "${WARMUP:-1}" --precision "$precision" | tee -a "$lines"
      done
    done
  done
done
echo
/usr/bin/python3 bench/floor_table.py "$lines"
