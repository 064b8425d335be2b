#!/usr/bin/env bash
# A resumed run's records equal the uninterrupted run's, line for line, for
# every driver. Each driver trains 12 steps twice at one thread: once
# straight, once stopped at step 10 (--stop-after: the process ends there as
# a killed one would, two steps past the step-8 checkpoint) and resumed. Train
# lines come every 3 steps and checkpoints every 4, so the checkpoint falls
# inside a train line's interval (steps 7 to 9): the resumed run's line at
# step 9 must average the same three steps as the straight run's. Every
# field but the clock's (time_sec, sec_per_1k_steps) must be equal.
#
# Usage: tests/resume_records.sh CIFAR10 ORDER_EMBEDDING ATTENTIVE_READER RNNSEARCH TRANSFORMER LM
set -uo pipefail
declare -A bin=([cifar10]=$1 [order_embedding]=$2 [attentive_reader]=$3 [rnnsearch]=$4 [transformer]=$5 [lm]=$6)
declare -A args=(
  # CIFAR-10 validates at every epoch: 4 batches of 20 of the 100 - 20 training images.
  [cifar10]="--norm rmsnorm --width 0.125 --train-size 100 --batch 20 --valid-size 20 --zca off"
  [order_embedding]="--embed-dim 32 --word-dim 16 --synthetic-images 200 --synthetic-dim 32 --batch 32 --eval-every 4"
  [attentive_reader]="--embed 16 --hidden 16 --batch 8 --synthetic-questions 200 --eval-every 4"
  [rnnsearch]="--embed 24 --hidden 24 --batch 16 --synthetic-max-words 6 --synthetic-pairs 300 --valid-limit 20
               --valid-beam 1 --beam 1 --eval-every 4"
  [transformer]="--model-size 32 --ffn 64 --layers 1 --batch-tokens 1000 --warmup 10 --synthetic-max-words 6
                 --synthetic-pairs 300 --valid-limit 20 --valid-beam 1 --beam 1 --eval-every 4"
  [lm]="--layers 1 --model-size 32 --heads 2 --ffn 86 --context 32 --batch 8 --synthetic-chars 20000
        --valid-chars 2048 --sample-chars 40 --eval-every 4"
)
export OMP_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common="--threads 1 --seed 5 --steps 12 --log-every 3"
fail=0
for driver in cifar10 order_embedding attentive_reader rnnsearch transformer lm; do
  straight=$work/$driver-straight resumed=$work/$driver-resumed
  # shellcheck disable=SC2086  # the flags are words
  if ! "${bin[$driver]}" ${args[$driver]} $common --out "$straight" > "$work/log" 2>&1 ||
     ! "${bin[$driver]}" ${args[$driver]} $common --stop-after 10 --out "$resumed" >> "$work/log" 2>&1 ||
     ! "${bin[$driver]}" ${args[$driver]} $common --resume --out "$resumed" >> "$work/log" 2>&1; then
    echo "FAIL: $driver: a run failed:"; tail -5 "$work/log"; fail=1; continue
  fi
  if difference=$(python3 - "$straight/metrics.jsonl" "$resumed/metrics.jsonl" <<'PY'
import json, sys
def records(path):
    lines = [json.loads(line) for line in open(path) if line.strip()]
    for line in lines:
        line.pop("time_sec", None)
        line.pop("sec_per_1k_steps", None)
    return lines
want, got = records(sys.argv[1]), records(sys.argv[2])
for i, (w, g) in enumerate(zip(want, got)):
    if w != g:
        sys.exit(f"line {i + 1}: {json.dumps(g)} against {json.dumps(w)}")
if len(want) != len(got):
    sys.exit(f"{len(got)} lines against {len(want)}")
print(f"{len(want)} lines")
PY
  2>&1); then
    echo "PASS: $driver: the resumed run's metrics.jsonl equals the straight run's ($difference, the clock aside)"
  else
    echo "FAIL: $driver: the resumed run's metrics.jsonl differs: $difference"; fail=1
  fi
done
exit $fail
