#!/usr/bin/env bash
# The main job: builds what is needed, trains ConvPool-CNN-C briefly with
# LayerNorm, RMSNorm and pRMSNorm on the built-in synthetic CIFAR-like images,
# times the three norms' training steps against each other in pairs, fused and
# composed from ops (bench_norm_impl), and prints the paper-style table
# (validation error, step time, speedup against LayerNorm with 95% intervals)
# with a paragraph on how to read it. A second run replaces the first (its
# runs are moved into runs/quickstart/<norm>/replaced-<time>/). Extra arguments go to every training
# run, e.g. --threads 1; THREADS sets the timing's threads (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh cifar10 paper_table bench_norm_impl
out=runs/quickstart
for norm in layernorm rmsnorm prmsnorm; do
  echo "== cifar10 --norm $norm"
  build/bin/cifar10 --norm "$norm" --width 0.25 --train-size 5000 --valid-size 1000 --steps 100 \
    --log-every 50 --overwrite --out "$out/$norm" "$@"
done
echo
echo "== paired timing: every norm's step fused and composed from ops, in interleaved rounds in one process"
build/bin/bench_norm_impl --model convpool --set width=0.25 --impl fused,composed --norms "layernorm rmsnorm prmsnorm" \
  --pairs 12 --warmup 1 --threads "${THREADS:-$(nproc)}" | tee "$out/paired.jsonl"
echo
echo "ConvPool-CNN-C (width 0.25) on synthetic images, 100 steps of 100 (cf. the paper's Table 10, whose"
echo "speedups are RMSNorm 20.5% and pRMSNorm 23.1% against LayerNorm, composed in Theano on a GPU):"
echo
build/bin/paper_table "$out" --metric error_pct --split valid --paired "$out/paired.jsonl"
