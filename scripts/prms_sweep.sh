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
source scripts/sweep.sh
if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
  echo "usage: scripts/prms_sweep.sh OUT [--multi30k] [rnnsearch flags ...]" >&2
  exit 2
fi
out=$1
shift
multi30k_args "$@"
p_values=${P_VALUES:-"0.0625 0.1 0.25 0.5 0.75 1.0"}
scripts/build.sh rnnsearch bench_norm_impl

for p in $p_values; do
  dir=$out/p$p
  resume=(--overwrite)  # a run killed before its first checkpoint starts afresh
  [ -f "$dir/checkpoint.safetensors" ] && resume=(--resume)
  echo "== rnnsearch --norm prmsnorm --p $p"
  build/bin/rnnsearch --norm prmsnorm --p "$p" --out "$dir" "${resume[@]}" "${args[@]}"
done

# Each p's step against LayerNorm's, paired in one process, at the driver's
# sizes and threads (scripts/paired_timing.sh).
for p in $p_values; do
  IMPLS=fused NORMS_TIMED=prmsnorm scripts/paired_timing.sh rnnsearch "$out/p$p" "${args[@]}" --p "$p"
done

scripts/deps.sh python3-matplotlib
/usr/bin/python3 scripts/plot_prms_sweep.py "$out" $p_values -o "$out/figure3.png" | tee "$out/figure3.md"
echo "table: $out/figure3.md, figure: $out/figure3.png"
