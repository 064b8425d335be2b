#!/usr/bin/env bash
# The paper's Table 10 and its error curves from one command: trains
# ConvPool-CNN-C with every normalization into sibling run directories, then
# prints the results table and draws training and validation error against
# epochs, one line per norm.
#
#   scripts/cifar10_paper.sh OUT [cifar10 flags ...]
#   scripts/cifar10_paper.sh runs/cifar10 --data ../shared/data/cifar10/cifar10-train-jpeg.tar.gz --width 0.5 --epochs 5
#
# NORMS="rmsnorm layernorm" overrides the list. A run whose directory already
# holds a finished run (a checkpoint at its last step) is resumed, so an
# interrupted sweep continues where it stopped. The figure needs Debian's
# python3-matplotlib (installed when missing).
# The table's time columns come from paired timing of the model's steps
# (scripts/paired_timing.sh: every norm fused and composed in one process;
# PAIRED=0 skips it, and the table then says its times are from separate runs).
# SEEDS="1 2 3" trains every norm once per seed: the table then gives each
# metric's mean ± sd and the difference from LayerNorm paired by seed with its
# 95% interval, and the figures a mean curve with a band (scripts/sweep.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sweep.sh
if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
  echo "usage: scripts/cifar10_paper.sh OUT [cifar10 flags ...]" >&2
  exit 2
fi
out=$1
shift
norms=${NORMS:-"none layernorm rmsnorm prmsnorm batchnorm weightnorm"}
scripts/build.sh cifar10 paper_table
train_every_norm cifar10 "$out" "$@"
time_in_pairs convpool "$out" "$@"
echo
build/bin/paper_table "$out" --metric error_pct --split valid,test --time epoch "${paired[@]}" | tee "$out/table.md"
scripts/deps.sh python3-matplotlib
/usr/bin/python3 scripts/plot_curves.py "$out" --metric error_pct --split train,valid --x epoch \
  -o "$out/error_curves.png"
echo "table: $out/table.md, figure: $out/error_curves.png"
