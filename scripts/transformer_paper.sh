#!/usr/bin/env bash
# The paper's Table 4 from one command: trains the Transformer with each
# normalization, post-norm (the paper's) and pre-norm, into sibling run
# directories, then prints one table per position (validation and test BLEU,
# seconds per 1k training steps, the speedup against LayerNorm) and draws
# validation loss and BLEU against steps and against training time.
#
#   scripts/transformer_paper.sh OUT [transformer flags ...]
#   scripts/transformer_paper.sh runs/tf-multi30k --multi30k --steps 6000 --eval-every 1000 --threads 2
#
# --multi30k stands for Multi30k German→English from ../shared/data (train,
# val, and test2016 as the test set). Without data flags the runs use the
# synthetic task (and the driver's small synthetic defaults). NORMS overrides
# the list (default: none layernorm rmsnorm prmsnorm) and POSITIONS the
# positions (default: post pre). Every run gets the same flags, so the runs
# have equal length; a run whose directory holds a checkpoint is resumed. The
# time columns come from paired timing of the model's steps in one process
# (scripts/paired_timing.sh; PAIRED=0 skips it). SEEDS="1 2 3" trains each
# norm once per seed (scripts/sweep.sh), and KEEP=DIR keeps each run's record
# in DIR/<position>/<norm>-seed<S> (one folder per position: the runs of the
# two positions share their names). The figures need Debian's
# python3-matplotlib (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sweep.sh
if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
  echo "usage: scripts/transformer_paper.sh OUT [--multi30k] [transformer flags ...]" >&2
  exit 2
fi
out=$1
shift
multi30k_args "$@"
norms=${NORMS:-"none layernorm rmsnorm prmsnorm"}
positions=${POSITIONS:-"post pre"}
scripts/build.sh transformer paper_table
scripts/deps.sh python3-matplotlib
for position in $positions; do
  KEEP=${KEEP:+$KEEP/$position} train_every_norm transformer "$out/$position" --norm-position "$position" "${args[@]}"
  time_in_pairs transformer "$out/$position" --norm-position "$position" "${args[@]}"
  echo
  {
    echo "Table 4, $position-norm (BLEU: sacreBLEU's default, cased, detokenised; validation BLEU is the last"
    echo "validation, test BLEU that of the checkpoint with the best validation BLEU; time: paired steps when"
    echo "timed, else per 1k training steps from the runs' logs, evaluation excluded):"
    echo
    build/bin/paper_table "$out/$position" --split valid,test --metric bleu --time 1k --decimals 2 "${paired[@]}"
  } | tee "$out/$position/tables.md"
  for x in step time; do
    /usr/bin/python3 scripts/plot_curves.py "$out/$position" --metric loss,bleu --split valid,valid --x "$x" \
      -o "$out/$position/valid_by_$x.png"
  done
done
for position in $positions; do echo "table: $out/$position/tables.md; figures: valid_by_step.png, valid_by_time.png beside it"; done
