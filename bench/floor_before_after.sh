#!/usr/bin/env bash
# Two builds' training steps against the same floor, interleaved: for every
# model, thread count and norm, the bench_floor of BEFORE (a build/bin folder
# of an earlier commit) and of this build take turns, ROUNDS times over, so
# both see the same drift of the machine; then the table
# (bench/floor_before_after.py): each step before and after, after ÷ before,
# step ÷ floor, and where the time beyond the products went.
#
#   git worktree add /tmp/before 95d110a && (cd /tmp/before && scripts/build.sh)
#   bench/floor_before_after.sh /tmp/before/build/bin
#   # MODELS, THREADS="1 2", NORMS="layernorm rmsnorm", PRECISIONS=f32, ROUNDS=2, STEPS=3, WARMUP=1
#
# PRECISIONS="f32 bf16" times each step with its products in f32 and in bf16
# (--precision), and adds the table of each build's bf16 step ÷ its f32 step.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BEFORE_BIN (the build/bin folder of the earlier build)" >&2; exit 2; }
before=$(cd "$1" && pwd)
[ -x "$before/bench_floor" ] || { echo "error: $before/bench_floor is not there" >&2; exit 1; }
source "$(dirname "$0")/common.sh"
build_bench bench_floor
for _ in $(seq "${ROUNDS:-2}"); do
  for model in ${MODELS:-convpool order_embedding reader rnnsearch transformer lm}; do
    for t in ${THREADS:-1 2}; do
      for norm in ${NORMS:-layernorm rmsnorm}; do
        for precision in ${PRECISIONS:-f32}; do
          for side in before after; do
            binary=$build/bin/bench_floor
            [ "$side" = before ] && binary=$before/bench_floor
            "$binary" --model "$model" --norm "$norm" --threads "$t" --steps "${STEPS:-3}" --warmup "${WARMUP:-1}" \
              --precision "$precision" | tail -1 | sed "s/^{/{\"build\": \"$side\", /" | tee -a "$lines"
          done
        done
      done
    done
  done
done
echo
/usr/bin/python3 bench/floor_before_after.py "$lines"
