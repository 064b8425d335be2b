#!/usr/bin/env bash
# The paper's Tables 7 and 8 and its recall curves from one command: trains
# the order-embedding model with each normalization inside the GRU into
# sibling run directories, then prints Table 7 (the selected model's test
# recalls and mean rank in both directions), Table 8 (time per 0.1k steps and
# the speedup against LayerNorm) and draws validation R@1, R@5 and R@10 of
# image retrieval against steps, one line per norm.
#
#   scripts/order_embedding_paper.sh OUT [order_embedding flags ...]
#   scripts/order_embedding_paper.sh runs/oe-real --steps 800 --eval-every 40 \
#     --features ../shared/data/multi30k/features/test_2016_flickr-resnet50-avgpool.npy \
#     --captions ../shared/data/multi30k/task2/raw/test_2016.1.en.gz,...,test_2016.5.en.gz
#
# With --multi30k in place of --features/--captions the script passes the
# Multi30k files from ../shared/data. NORMS="rmsnorm layernorm" overrides the
# list. A run whose directory holds a checkpoint is resumed, so an
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
  echo "usage: scripts/order_embedding_paper.sh OUT [--multi30k] [order_embedding flags ...]" >&2
  exit 2
fi
out=$1
shift
args=()
for a in "$@"; do
  if [ "$a" = --multi30k ]; then
    m=../shared/data/multi30k
    args+=(--features "$m/features/test_2016_flickr-resnet50-avgpool.npy"
           --captions "$(echo $m/task2/raw/test_2016.{1,2,3,4,5}.en.gz | tr ' ' ,)")
  else
    args+=("$a")
  fi
done
norms=${NORMS:-"none layernorm rmsnorm prmsnorm"}
scripts/build.sh order_embedding paper_table
train_every_norm order_embedding "$out" "${args[@]}"
time_in_pairs order_embedding "$out" "${args[@]}"
echo
{
  echo "Table 7 (test, the model selected on validation R@1+R@5+R@10 of image retrieval):"
  echo
  build/bin/paper_table "$out" --split test --time 0.1k --decimals 1 "${paired[@]}" \
    --metric caption_r1,caption_r5,caption_r10,caption_mean_r,image_r1,image_r5,image_r10,image_mean_r
  echo
  echo "Table 8 (time: paired steps when timed, else per 0.1k training steps from the runs' logs):"
  echo
  build/bin/paper_table "$out" --split test --time 0.1k --decimals 1 --metric rsum "${paired[@]}"
} | tee "$out/tables.md"
scripts/deps.sh python3-matplotlib
/usr/bin/python3 scripts/plot_curves.py "$out" --metric image_r1,image_r5,image_r10 --split valid --x step \
  -o "$out/recall_curves.png"
echo "tables: $out/tables.md, figure: $out/recall_curves.png"
