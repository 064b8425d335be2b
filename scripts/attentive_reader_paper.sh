#!/usr/bin/env bash
# The paper's Table 6 and Figure 5 from one command: trains the attentive
# reader with each normalization inside its LSTMs into sibling run
# directories, then prints the table (seconds per 0.1k and per 1k training
# steps, the speedup against LayerNorm, the final validation error) and draws
# the validation error against steps, one line per norm.
#
#   scripts/attentive_reader_paper.sh OUT [attentive_reader flags ...]
#   scripts/attentive_reader_paper.sh runs/reader-babi1 --babi1 --steps 1500 --eval-every 50
#
# --babi1 stands for bAbI task 1 from ../shared/data (--format babi --data
# …/qa1_single-supporting-fact_train.txt; a tenth of its stories held out),
# --babi2 … --babi20 for the other tasks (qa2: two supporting facts).
# Without data flags the runs use the synthetic task. NORMS="rmsnorm
# layernorm" overrides the list (default: none layernorm rmsnorm prmsnorm
# batchnorm). A run whose directory holds a checkpoint is resumed, so an
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
  echo "usage: scripts/attentive_reader_paper.sh OUT [--babiN] [attentive_reader flags ...]" >&2
  exit 2
fi
out=$1
shift
args=()
for a in "$@"; do
  if [[ "$a" =~ ^--babi([0-9]+)$ ]]; then
    task=${BASH_REMATCH[1]}
    files=(../shared/data/babi/en/qa"$task"_*_train.txt)
    if [ ! -f "${files[0]}" ]; then
      echo "error: $a needs ../shared/data/babi/en/qa${task}_*_train.txt (bAbI has tasks 1 to 20;" \
        "../shared/data may not be on this machine)" >&2
      exit 1
    fi
    args+=(--format babi --data "${files[0]}")
  else
    args+=("$a")
  fi
done
norms=${NORMS:-"none layernorm rmsnorm prmsnorm batchnorm"}
scripts/build.sh attentive_reader paper_table
train_every_norm attentive_reader "$out" "${args[@]}"
time_in_pairs reader "$out" "${args[@]}"
echo
{
  echo "Table 6 (the last validation error; time: paired steps when timed, else per 0.1k training steps"
  echo "from the runs' logs, evaluation excluded):"
  echo
  build/bin/paper_table "$out" --split valid --metric error_pct --time 0.1k --decimals 1 "${paired[@]}"
  if [ ${#paired[@]} -eq 0 ]; then
    echo
    echo "The same per 1k steps:"
    echo
    build/bin/paper_table "$out" --split valid --metric error_pct --time 1k --decimals 1
  fi
} | tee "$out/tables.md"
scripts/deps.sh python3-matplotlib
/usr/bin/python3 scripts/plot_curves.py "$out" --metric error_pct --split valid --x step -o "$out/valid_error.png"
echo "tables: $out/tables.md, figure: $out/valid_error.png"
