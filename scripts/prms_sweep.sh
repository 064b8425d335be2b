#!/usr/bin/env bash
# The paper's Figure 3: how pRMSNorm's p (the fraction of units whose RMS
# normalizes the whole layer) trades quality for speed. Trains RNNSearch with
# pRMSNorm at every p, with the same flags and steps, into OUT/p<p>; times each
# p's training step against LayerNorm's in interleaved pairs in one process
# (build/bin/bench_norm_impl, as scripts/paired_timing.sh does for the norms);
# then prints validation and test BLEU per p beside its step time and draws
# BLEU against p with the time ratio on a second axis.
#
#   scripts/prms_sweep.sh OUT [--multi30k] [rnnsearch flags ...]
#   scripts/prms_sweep.sh runs/prms-multi30k --multi30k --steps 4000 --eval-every 1000
#
# P_VALUES (default "0.0625 0.1 0.25 0.5 0.75 1.0"; p = 1 is RMSNorm: the RMS
# of every unit) chooses the points. --multi30k stands for Multi30k
# German→English from ../shared/data, as in scripts/rnnsearch_paper.sh;
# without data flags the runs use the synthetic task. A run whose directory
# holds a checkpoint is resumed. PAIRS (default 20) timed rounds per p;
# PAIRED=0 skips the timing. The figure needs Debian's python3-matplotlib.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
  echo "usage: scripts/prms_sweep.sh OUT [--multi30k] [rnnsearch flags ...]" >&2
  exit 2
fi
out=$1
shift
args=()
for a in "$@"; do
  if [ "$a" = --multi30k ]; then
    raw=../shared/data/multi30k/task1/raw
    if [ ! -f "$raw/train.de.gz" ]; then
      echo "error: --multi30k needs $raw/train.de.gz (../shared/data is not on this machine)" >&2
      exit 1
    fi
    args+=(--train-src "$raw/train.de.gz" --train-tgt "$raw/train.en.gz"
           --valid-src "$raw/val.de.gz" --valid-tgt "$raw/val.en.gz"
           --test-src "$raw/test_2016_flickr.de.gz" --test-tgt "$raw/test_2016_flickr.en.gz")
  else
    args+=("$a")
  fi
done
p_values=${P_VALUES:-"0.0625 0.1 0.25 0.5 0.75 1.0"}
scripts/build.sh rnnsearch bench_norm_impl

for p in $p_values; do
  dir=$out/p$p
  resume=()
  [ -f "$dir/checkpoint.safetensors" ] && resume=(--resume)
  echo "== rnnsearch --norm prmsnorm --p $p"
  build/bin/rnnsearch --norm prmsnorm --p "$p" --out "$dir" "${resume[@]}" "${args[@]}"
done

# Paired timing at the driver's sizes and threads (the flags bench_norm_impl's
# RNNSearch step reads; the rest is its recipe and fixed random batch).
if [ "${PAIRED:-1}" != 0 ]; then
  sets=()
  threads=$(nproc)
  set -- "${args[@]}"
  while [ $# -gt 0 ]; do
    flag=${1%%=*}
    if [[ "$1" == *=* ]]; then value=${1#*=}; shift; else value=${2:-}; shift; [ $# -gt 0 ] && shift; fi
    case "$flag" in
      --threads) threads=$value ;;
      --batch) sets+=(--set "batch=$value") ;;
      --embed) sets+=(--set "embed=$value") ;;
      --hidden) sets+=(--set "hidden=$value") ;;
    esac
  done
  for p in $p_values; do
    echo "== paired timing: pRMSNorm at p = $p against LayerNorm ($threads threads)"
    build/bin/bench_norm_impl --model rnnsearch --impl fused --threads "$threads" --pairs "${PAIRS:-20}" \
      --norms prmsnorm --set "p=$p" "${sets[@]}" > "$out/p$p/paired.jsonl.tmp"
    mv "$out/p$p/paired.jsonl.tmp" "$out/p$p/paired.jsonl"
  done
fi

scripts/deps.sh python3-matplotlib
/usr/bin/python3 scripts/plot_prms_sweep.py "$out" $p_values -o "$out/figure3.png" | tee "$out/figure3.md"
echo "table: $out/figure3.md, figure: $out/figure3.png"
