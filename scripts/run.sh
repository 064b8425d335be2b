#!/usr/bin/env bash
# The main job: builds what is needed, trains ConvPool-CNN-C with LayerNorm,
# RMSNorm and pRMSNorm on the built-in synthetic CIFAR-like images, each until
# its validation error is under 5% (the question of the paper's Figure 1: how
# many steps and how much time each norm needs to reach the same quality),
# times the three norms' training steps against each other in pairs, fused and
# composed from ops (bench_norm_impl), and prints the paper-style table (steps
# and training time to 5%, validation error, step time, speedup against
# LayerNorm with 95% intervals) with a legend and a paragraph on how to read
# it. A second run replaces the first (its runs are moved into
# runs/quickstart/<norm>/replaced-<time>/). Extra arguments go to every
# training run, e.g. --threads 1; THREADS sets the timing's threads (default:
# all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh cifar10 paper_table bench_norm_impl
out=runs/quickstart
target=5       # % validation error every norm trains to
check_every=10 # steps: one epoch of 1,000 images in batches of 100, so one evaluation
first_part=50  # steps before the first check (every norm here is near chance until about step 60; a run that gets
               # under the target earlier goes on to step 50, and the table still reads its first evaluation under it)
max_steps=300  # the cap; lr 0.003 holds until step 150 (then decays to 0 at 300), so runs that stop before train at one rate
train=(--width 0.25 --train-size 1000 --valid-size 300 --steps "$max_steps" --log-every "$check_every")
last_valid_error() { grep '"split":"valid"' "$1/metrics.jsonl" | tail -n 1 | sed 's/.*"error_pct":\([0-9.eE+-]*\).*/\1/'; }
for norm in layernorm rmsnorm prmsnorm; do
  echo "== cifar10 --norm $norm, until its validation error is under $target% (evaluated every $check_every steps, at most $max_steps)"
  # The run goes in parts (--stop-after, then --resume, which continues exactly): $first_part steps,
  # then $check_every at a time, and stops at the first evaluation under the target. The first part
  # prints every setting; the others only their log lines (without the clock, which starts again
  # with each part).
  step_lines='s/^\[[0-9:]+\] (step +[0-9]+ +(train|valid) )/\1/'
  for ((step = first_part; ; step += check_every)); do
    if ((step == first_part)); then
      build/bin/cifar10 --norm "$norm" "${train[@]}" --stop-after "$step" --overwrite --out "$out/$norm" "$@" |
        sed -E "/ \(--stop-after\)\$/d; $step_lines"
    else
      build/bin/cifar10 --norm "$norm" "${train[@]}" --stop-after "$step" --resume --out "$out/$norm" "$@" |
        sed -n -E "${step_lines}p"
    fi
    error=$(last_valid_error "$out/$norm")
    [[ -n $error ]] || { echo "run.sh: no validation line in $out/$norm/metrics.jsonl" >&2; exit 1; }
    shown=$(awk -v e="$error" 'BEGIN { printf "%.1f", e }')
    if awk -v e="$error" -v t="$target" 'BEGIN { exit !(e + 0 < t + 0) }'; then
      echo "$norm: validation error $shown% at step $step, under $target%"
      break
    fi
    if ((step >= max_steps)); then
      echo "$norm: validation error $shown% after $max_steps steps, still not under $target%"
      break
    fi
  done
done
echo
echo "== paired timing: every norm's step fused and composed from ops, in interleaved rounds in one process"
build/bin/bench_norm_impl --model convpool --set width=0.25 --impl fused,composed --norms "layernorm rmsnorm prmsnorm" \
  --pairs 12 --warmup 1 --threads "${THREADS:-$(nproc)}" | tee "$out/paired.jsonl"
echo
echo "ConvPool-CNN-C (width 0.25) on synthetic images, batches of 100 at lr 0.003, each norm trained until its validation"
echo "error fell under $target% (evaluated every $check_every steps; one seed, so an evaluation or two apart is no ranking)."
echo "Cf. the paper's Figure 1, and its Table 10, whose speedups are RMSNorm 20.5% and pRMSNorm 23.1% against LayerNorm,"
echo "composed in Theano on a GPU:"
echo
build/bin/paper_table "$out" --metric error_pct --split valid --decimals 1 --below "$target" --paired "$out/paired.jsonl"
