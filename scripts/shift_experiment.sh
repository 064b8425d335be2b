#!/usr/bin/env bash
# The paper's open question whether RMSNorm needs centred inputs: every
# normalized place's input starts shifted by C (--preact-shift C: a learnable
# offset per unit, initialised to C), for each C, each norm and each seed, on
# one of two tasks; then the table of final validation error (mean ± sd over
# the seeds, and the change against C = 0 paired by seed; build/bin/paper_table
# --label preact-shift --reference 0) and the curves, one panel per C
# (scripts/plot_shift.py), and where the offsets ended (scripts/shift_offsets.py).
#
#   scripts/shift_experiment.sh OUT reader [attentive_reader flags ...]   # bAbI task 1 from ../shared/data
#   scripts/shift_experiment.sh OUT cifar [cifar10 flags ...]             # CIFAR-10 (--data ...), or synthetic
#
#   scripts/shift_experiment.sh runs/shift-babi1 reader --embed 64 --hidden 64 --batch 32 --lr 0.001 \
#     --dropout 0.3 --steps 3000 --eval-every 250
#   scripts/shift_experiment.sh runs/shift-cifar cifar --data ../shared/data/cifar10/cifar10-train-jpeg.tar.gz \
#     --width 0.25 --epochs 3          # (cifar10 validates once an epoch)
#
# SHIFTS (default "0 1 4 16"), NORMS (default "none layernorm rmsnorm
# prmsnorm") and SEEDS (default "1 2 3") choose the grid; runs go to
# OUT/c<C>/<norm>-seed<s>, their output to OUT/logs/. Each run uses one thread and JOBS of them (default:
# the number of cores) run at once. A run whose directory holds a checkpoint
# is resumed, so an interrupted sweep continues where it stopped. The figure
# needs Debian's python3-matplotlib (installed when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ] || [[ "$1" == -* ]]; then
  echo "usage: scripts/shift_experiment.sh OUT reader|cifar [driver flags ...]" >&2
  exit 2
fi
out=$1 task=$2
shift 2
case "$task" in
  reader)
    driver=attentive_reader
    babi=../shared/data/babi/en/qa1_single-supporting-fact_train.txt
    [ -f "$babi" ] || { echo "error: the reader task needs $babi (../shared/data is not on this machine)" >&2; exit 1; }
    task_args=(--format babi --data "$babi") ;;
  cifar)
    driver=cifar10
    task_args=() ;;
  *) echo "error: unknown task '$task' (reader or cifar)" >&2; exit 2 ;;
esac
metric=error_pct
scripts/build.sh "$driver" paper_table >/dev/null
scripts/deps.sh python3-matplotlib

jobs=${JOBS:-$(nproc)}
failed=0
mkdir -p "$out/logs"
for shift_c in ${SHIFTS:-0 1 4 16}; do
  for norm in ${NORMS:-none layernorm rmsnorm prmsnorm}; do
    for seed in ${SEEDS:-1 2 3}; do
      dir=$out/c$shift_c/$norm-seed$seed
      log=$out/logs/c$shift_c-$norm-seed$seed
      resume=(--overwrite)  # a run killed before its first checkpoint starts afresh
      [ -f "$dir/checkpoint.safetensors" ] && resume=(--resume)
      [ -f "$log.done" ] && continue  # finished earlier: not run again
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || failed=1; done
      echo "== $driver --norm $norm --preact-shift $shift_c --seed $seed"
      (build/bin/"$driver" --norm "$norm" --preact-shift "$shift_c" --seed "$seed" --threads 1 --out "$dir" \
         "${resume[@]}" "${task_args[@]}" "$@" > "$log.out" 2>&1 && touch "$log.done") &
    done
  done
done
wait || true
# The finished marks decide: a job whose status `wait -n` did not collect
# (two ending together) still left no mark if it failed.
for shift_c in ${SHIFTS:-0 1 4 16}; do
  for norm in ${NORMS:-none layernorm rmsnorm prmsnorm}; do
    for seed in ${SEEDS:-1 2 3}; do
      [ -f "$out/logs/c$shift_c-$norm-seed$seed.done" ] || failed=1
    done
  done
done
if [ "$failed" != 0 ]; then
  echo "error: some runs failed; each run's output is in $out/logs/" >&2
  grep -l "error" "$out"/logs/*.out >&2 || true
  exit 1
fi
norms=${NORMS:-none layernorm rmsnorm prmsnorm}
{
  echo "Final validation $metric per shift C, each norm over its seeds (mean ± sd), and the change from C = 0"
  echo "paired by seed with its 95% interval (build/bin/paper_table --label preact-shift --reference 0). The time"
  echo "columns come from runs made $jobs at a time on one machine: they show no speed difference, only drift."
  for norm in $norms; do
    echo
    echo "**$norm**"
    echo
    build/bin/paper_table "$out"/c*/"$norm"-seed* --label preact-shift --reference 0 --split valid \
      --metric "$metric" --decimals 1 | sed '/^(Time from/,$d'
  done
  for shift_c in ${SHIFTS:-0 1 4 16}; do
    echo
    echo "**C = $shift_c**, the norms against LayerNorm:"
    echo
    build/bin/paper_table "$out/c$shift_c" --split valid --metric "$metric" --decimals 1 | sed '/^(Time from/,$d'
  done
  echo
  echo "Where the learnable offsets (each started at C) ended, from the last checkpoints (scripts/shift_offsets.py):"
  echo
  /usr/bin/python3 scripts/shift_offsets.py "$out"
} | tee "$out/shift_table.md"
/usr/bin/python3 scripts/plot_shift.py "$out" --metric "$metric" -o "$out/shift_curves.png"
echo "table: $out/shift_table.md, figure: $out/shift_curves.png"
