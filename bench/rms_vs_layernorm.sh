#!/usr/bin/env bash
# Our RMSNorm step against our LayerNorm step, for the models whose issues ask
# "RMSNorm's step faster than LayerNorm's". Each bench program builds both
# models in ONE process and alternates their steps (A B, B A, …; see
# bench/step_timing.h), so the VM's minute-to-minute drift hits both alike;
# the table gives each one's median step, the median of the per-pair ratios
# RMSNorm ÷ LayerNorm and its distribution-free 95% interval. An interval
# wholly below 1 means RMSNorm's step is the faster.
#
#   bench/rms_vs_layernorm.sh convpool [threads ...]          ConvPool-CNN-C, width 0.5, batch 100
#   bench/rms_vs_layernorm.sh order_embedding [threads ...]   order-embedding step (both similarities)
#   bench/rms_vs_layernorm.sh attentive_reader [threads ...]  attentive reader step (batch 64, 300 tokens)
#   bench/rms_vs_layernorm.sh rnnsearch [threads ...]         RNNSearch step (batch 80, 13–22 subwords, vocab 8000)
#
# PAIRS (default 40) sets the number of timed pairs; NORM (default rmsnorm)
# the norm timed against LayerNorm, e.g. NORM=none for the step without any.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/rms_vs_layernorm.sh convpool|order_embedding|attentive_reader|rnnsearch [threads ...]}
shift
threads=("$@")
[ ${#threads[@]} -eq 0 ] && threads=(1 2)
pairs=${PAIRS:-40}
norm=${NORM:-rmsnorm}
case "$model" in
  convpool) variants=("--width 0.5") ;;
  order_embedding) variants=("--method order" "--method cosine") ;;
  attentive_reader) variants=("--warmup 1") ;;
  rnnsearch) variants=("--warmup 2") ;;
  *) echo "unknown model '$model' (convpool, order_embedding, attentive_reader or rnnsearch)" >&2; exit 2 ;;
esac
scripts/build.sh "bench_$model" >/dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for t in "${threads[@]}"; do
  for v in "${variants[@]}"; do
    # shellcheck disable=SC2086
    line=$(build/bin/bench_$model --norm "$norm" --against layernorm --threads "$t" --pairs "$pairs" $v)
    echo "{\"variant\": \"$v\", \"row\": $line}" | tee -a "$out"
  done
done
echo
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
norm = rows[0]["row"]["norm"]
print(f"| threads | variant | layernorm ms/step | {norm} ms/step | {norm} ÷ layernorm (median of pairs) "
      f"| 95% interval | pairs {norm} faster |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    x = r["row"]
    print(f"| {x['threads']} | {r['variant']} | {x['against_ms']:.1f} | {x['norm_ms']:.1f} | {x['ratio']:.3f} "
          f"| {x['ratio_lo95']:.3f}–{x['ratio_hi95']:.3f} | {x['norm_faster']} of {x['pairs']} |")
PY
