#!/usr/bin/env bash
# The paper's comparison for the LLaMA-style language model from one command:
# trains experiments/lm with each normalization in its blocks into sibling run
# directories, then prints the table (validation bits per character, seconds
# per 1k training steps, the speedup against LayerNorm) and draws validation
# bits per character against steps and against training time.
#
#   scripts/lm_paper.sh OUT [lm flags ...]
#   SEEDS="1 2 3" JOBS=2 scripts/lm_paper.sh runs/lm-norms --cbt --model-size 128 --ffn 344 --steps 1000 \
#     --eval-every 250 --threads 1
#
# --cbt stands for the Children's Book Test books of ../shared/data (nine to
# train on, the Grey Fairy Book held out); without it the runs use the
# driver's synthetic sentences. NORMS overrides the list (default: none
# layernorm rmsnorm prmsnorm). Every run gets the same flags, so the runs have
# equal length; a run whose directory holds a checkpoint is resumed. The time
# columns come from paired timing of the model's steps in one process
# (scripts/paired_timing.sh; PAIRED=0 skips it). SEEDS="1 2 3" trains each
# norm once per seed, JOBS=2 two runs at a time (scripts/sweep.sh). The
# figures need Debian's python3-matplotlib (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sweep.sh
if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
  echo "usage: scripts/lm_paper.sh OUT [--cbt] [lm flags ...]" >&2
  exit 2
fi
out=$1
shift
args=()
for a in "$@"; do
  if [ "$a" = --cbt ]; then
    if [ ! -f ../shared/data/cbt/CBTest/data/cbt_valid.txt ]; then
      echo "error: --cbt needs ../shared/data/cbt/CBTest/data/cbt_valid.txt (../shared/data is not on this machine)" >&2
      exit 1
    fi
    args+=(--data ../shared/data/cbt/CBTest/data)
  else
    args+=("$a")
  fi
done
norms=${NORMS:-"none layernorm rmsnorm prmsnorm"}
scripts/build.sh lm paper_table
scripts/deps.sh python3-matplotlib
train_every_norm lm "$out" --sample-chars 0 "${args[@]}"
time_in_pairs lm "$out" "${args[@]}"
echo
{
  echo "The language model's norms (validation loss in nats and bits per character of the held-out book at the"
  echo "last validation; time: paired steps when timed, else per 1k training steps from the runs' logs, evaluation excluded):"
  echo
  build/bin/paper_table "$out" --split valid --metric loss,bpc --time 1k --decimals 3 "${paired[@]}"
} | tee "$out/tables.md"
for x in step time; do
  /usr/bin/python3 scripts/plot_curves.py "$out" --metric bpc --split valid --x "$x" -o "$out/valid_bpc_by_$x.png"
done
echo "table: $out/tables.md; figures: valid_bpc_by_step.png, valid_bpc_by_time.png beside it"
