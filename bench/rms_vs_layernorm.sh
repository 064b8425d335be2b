#!/usr/bin/env bash
# Our RMSNorm step against our LayerNorm step, for the models whose issues ask
# "RMSNorm's step faster than LayerNorm's". The two are alternated ROUNDS
# times (default 5) at each thread count, so the VM's drift hits both alike;
# the table shows each one's median over the rounds and their ratio.
#
#   bench/rms_vs_layernorm.sh convpool [threads ...]          ConvPool-CNN-C, width 0.5, batch 100
#   bench/rms_vs_layernorm.sh order_embedding [threads ...]   order-embedding step (both similarities)
#   bench/rms_vs_layernorm.sh attentive_reader [threads ...]  attentive reader step (batch 64, 300 tokens)
#   bench/rms_vs_layernorm.sh rnnsearch [threads ...]         RNNSearch step (batch 80, 13–22 subwords, vocab 8000)
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/rms_vs_layernorm.sh convpool|order_embedding|attentive_reader|rnnsearch [threads ...]}
shift
threads=("$@")
[ ${#threads[@]} -eq 0 ] && threads=(1 2)
rounds=${ROUNDS:-5}
case "$model" in
  convpool) variants=("--width 0.5") ;;
  order_embedding) variants=("--method order --steps 5 --warmup 2" "--method cosine --steps 5 --warmup 2") ;;
  attentive_reader) variants=("--steps 3 --warmup 1") ;;
  rnnsearch) variants=("--steps 5 --warmup 2") ;;
  *) echo "unknown model '$model' (convpool, order_embedding, attentive_reader or rnnsearch)" >&2; exit 2 ;;
esac
scripts/build.sh "bench_$model" >/dev/null
out=$(mktemp)
for round in $(seq "$rounds"); do
  for t in "${threads[@]}"; do
    for v in "${variants[@]}"; do
      for norm in layernorm rmsnorm; do
        # shellcheck disable=SC2086
        line=$(build/bin/bench_$model --norm $norm --threads "$t" $v)
        echo "{\"variant\": \"$v\", \"row\": $line}" | tee -a "$out"
      done
    done
  done
done
echo
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
times = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    row = r["row"]
    ms = row.get("step_ms", row.get("ms_per_step"))
    times.setdefault((row["threads"], r["variant"], row["norm"]), []).append(ms)
print(f"Median over {sys.argv[2]} alternated rounds.\n")
print("| threads | variant | layernorm ms/step | rmsnorm ms/step | rmsnorm ÷ layernorm | rounds rmsnorm faster |")
print("|---|---|---|---|---|---|")
for (t, v, norm) in sorted(times):
    if norm != "layernorm":
        continue
    ln, rms = times[(t, v, "layernorm")], times[(t, v, "rmsnorm")]
    wins = sum(r < l for l, r in zip(ln, rms))
    print(f"| {t} | {v} | {statistics.median(ln):.1f} | {statistics.median(rms):.1f} | "
          f"{statistics.median(rms) / statistics.median(ln):.3f} | {wins} of {len(ln)} |")
PY
rm -f "$out"
