#!/usr/bin/env bash
# The paper's Tables 2–3 and Figure 1 from one command: trains RNNSearch with
# each normalization into sibling run directories, then prints the table
# (validation and test BLEU, seconds per 1k training steps, the speedup
# against LayerNorm) and draws validation loss and BLEU against steps and
# against training time, one line per norm — the paper's argument that a
# norm which helps per step may not help per second.
#
#   scripts/rnnsearch_paper.sh OUT [rnnsearch flags ...]
#   scripts/rnnsearch_paper.sh runs/mt-multi30k --multi30k --steps 2000 --eval-every 500
#
# --multi30k stands for Multi30k German→English from ../shared/data (train,
# val, and test2016 as the test set). Without data flags the runs use the
# synthetic task. NORMS="rmsnorm layernorm" overrides the list (default: none
# layernorm rmsnorm prmsnorm). Every norm gets the same flags, so the runs
# have equal length. A run whose directory holds a checkpoint is resumed, so
# an interrupted sweep continues where it stopped. The figures need Debian's
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
  echo "usage: scripts/rnnsearch_paper.sh OUT [--multi30k] [rnnsearch flags ...]" >&2
  exit 2
fi
out=$1
shift
multi30k_args "$@"
norms=${NORMS:-"none layernorm rmsnorm prmsnorm"}
scripts/build.sh rnnsearch paper_table
train_every_norm rnnsearch "$out" "${args[@]}"
time_in_pairs rnnsearch "$out" "${args[@]}"
echo
{
  echo "Tables 2–3 (BLEU: sacreBLEU's default, cased, detokenised; validation BLEU is the last validation,"
  echo "test BLEU that of the checkpoint with the best validation BLEU; time: paired steps when timed,"
  echo "else per 1k training steps from the runs' logs, evaluation excluded):"
  echo
  build/bin/paper_table "$out" --split valid,test --metric bleu --time 1k --decimals 2 "${paired[@]}"
} | tee "$out/tables.md"
scripts/deps.sh python3-matplotlib
for x in step time; do
  /usr/bin/python3 scripts/plot_curves.py "$out" --metric loss,bleu --split valid,valid --x "$x" \
    -o "$out/valid_by_$x.png"
done
echo "tables: $out/tables.md, figures: $out/valid_by_step.png, $out/valid_by_time.png"
