#!/usr/bin/env bash
# Do two builds train the same? Runs every driver a few steps on its
# synthetic default (and on ../shared/data where it is there), at one thread,
# with the binaries of BIN_A and of BIN_B, and compares their metrics.jsonl
# line by line without the clock fields: a refactoring that changes nothing
# for users leaves them bit-identical.
#
#   git worktree add /tmp/before HEAD~3 && (cd /tmp/before && scripts/build.sh)
#   scripts/compare_driver_metrics.sh /tmp/before/build/bin build/bin
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BIN_A BIN_B (two build/bin folders)" >&2; exit 2; }
bins=("$1" "$2")
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# run SIDE LABEL DRIVER FLAG ...: one run, its metrics without time_sec and sec_per_1k_steps.
run() {
  local side=$1 label=$2 driver=$3 dir="$out/$1/$2"
  shift 3
  "${bins[$side]}/$driver" --threads 1 --log-every 5 --out "$dir" "$@" > "$dir.log" 2>&1 ||
    { echo "$label ($side): $driver failed; see below"; tail -5 "$dir.log"; exit 1; }
  sed -E 's/,"time_sec":[^,}]*//; s/,"sec_per_1k_steps":[^,}]*//' "$dir/metrics.jsonl" > "$out/$side/$label.jsonl"
}

data=../shared/data
for side in 0 1; do
  mkdir -p "$out/$side"
  run $side reader attentive_reader --steps 30 --eval-every 10 --synthetic-questions 400 --embed 32 --hidden 32 --batch 16
  run $side oe order_embedding --steps 30 --eval-every 10 --synthetic-images 200 --synthetic-dim 32 --word-dim 32 \
    --embed-dim 32 --batch 16
  run $side mt rnnsearch --steps 30 --eval-every 10 --synthetic-pairs 400 --embed 32 --hidden 32 --batch 16 \
    --valid-limit 20 --valid-beam 2 --beam 2
  run $side transformer transformer --steps 30 --eval-every 10 --synthetic-pairs 400 --model-size 32 --ffn 64 \
    --heads 2 --layers 2 --batch-tokens 600 --warmup 10 --valid-limit 20 --valid-beam 2 --beam 2
  run $side transformer_pre transformer --steps 12 --eval-every 6 --synthetic-pairs 300 --model-size 32 --ffn 64 \
    --heads 2 --layers 1 --norm rmsnorm --norm-position pre --valid-limit 10 --valid-beam 1 --beam 1
  run $side lm lm --steps 30 --eval-every 10 --model-size 32 --ffn 64 --heads 2 --context 16 --batch 8 --sample-chars 20
  run $side cifar cifar10 --width 0.125 --steps 30 --train-size 400 --valid-size 100 --batch 20
  run $side cifar_weightnorm cifar10 --width 0.125 --steps 12 --train-size 100 --valid-size 100 --batch 20 \
    --norm weightnorm
  if [ -d $data ]; then
    run $side reader_babi attentive_reader --steps 20 --eval-every 10 --format babi --embed 32 --hidden 32 --batch 16 \
      --data $data/babi/en/qa1_single-supporting-fact_train.txt --valid-data $data/babi/en/qa2_two-supporting-facts_train.txt \
      --test-data $data/babi/en/qa3_three-supporting-facts_train.txt
    run $side cifar_real cifar10 --width 0.125 --steps 20 --data $data/cifar10/cifar-10-batches-bin-prefix \
      --train-size 200 --valid-size 100 --batch 20 --zca off
  fi
done
[ -d $data ] || echo "note: $data is absent: the real-data runs were skipped"

status=0
for a in "$out"/0/*.jsonl; do
  label=$(basename "$a" .jsonl)
  if cmp -s "$a" "$out/1/$label.jsonl"; then
    echo "$label: identical ($(wc -l < "$a") lines)"
  else
    echo "$label: DIFFERENT"; { diff "$a" "$out/1/$label.jsonl" || true; } | head -6; status=1
  fi
done
exit $status
