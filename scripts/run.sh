#!/usr/bin/env bash
# The main job: builds what is needed, trains ConvPool-CNN-C briefly with
# LayerNorm, RMSNorm and pRMSNorm on the built-in synthetic CIFAR-like images,
# and prints the paper-style table (validation error, time, speedup against
# LayerNorm). Extra arguments go to every training run, e.g. --threads 1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh cifar10 paper_table
out=runs/quickstart
for norm in layernorm rmsnorm prmsnorm; do
  echo "== cifar10 --norm $norm"
  build/bin/cifar10 --norm "$norm" --width 0.25 --train-size 5000 --valid-size 1000 --steps 120 \
    --log-every 50 --out "$out/$norm" "$@"
done
echo
echo "ConvPool-CNN-C (width 0.25) on synthetic images, 120 steps of 100 (cf. the paper's Table 10):"
build/bin/paper_table "$out" --metric error_pct --split valid --time 1k
