#!/usr/bin/env bash
# The time columns of a paper script's table, from paired timing: every norm's
# training step of MODEL, fused and composed from ops, against LayerNorm's in
# interleaved rounds in one process (build/bin/bench_norm_impl), at the sizes
# and threads the driver flags name (--width, --batch, --embed, --hidden,
# --embed-dim, the Transformer's --model-size --ffn --heads --layers
# --norm-position, the language model's --context, --threads; the rest of the model is the benchmark's recipe and
# its fixed random batch). Writes the JSON lines to OUT/paired.jsonl, which
# `paper_table --paired` turns into the table's time columns.
#
#   scripts/paired_timing.sh MODEL OUT [driver flags ...]     MODEL: rnnsearch transformer reader order_embedding convpool lm
#
# PAIRS (default 20) timed rounds; PAIRED=0 skips the timing (the table then
# says its times come from separate runs). NORMS_TIMED and IMPLS (default
# "fused,composed") narrow what is timed; RNNSearch's --p reaches pRMSNorm.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: scripts/paired_timing.sh MODEL OUT [driver flags ...]}
out=${2:?usage: scripts/paired_timing.sh MODEL OUT [driver flags ...]}
shift 2
[ "${PAIRED:-1}" = 0 ] && exit 0
declare -A keys
case "$model" in
  rnnsearch) keys=([--batch]=batch [--embed]=embed [--hidden]=hidden [--p]=p) ;;
  transformer) keys=([--model-size]=d [--ffn]=ffn [--heads]=heads [--layers]=layers [--norm-position]=position [--p]=p) ;;
  reader) keys=([--batch]=batch [--embed]=embed [--hidden]=hidden) ;;
  order_embedding) keys=([--batch]=batch [--embed-dim]=hidden) ;;
  convpool) keys=([--batch]=batch [--width]=width) ;;
  lm) keys=([--batch]=batch [--context]=context [--model-size]=d [--ffn]=ffn [--heads]=heads [--layers]=layers) ;;
  *) echo "scripts/paired_timing.sh: unknown model '$model'" >&2; exit 2 ;;
esac
sets=()
threads=$(nproc)
while [ $# -gt 0 ]; do
  flag=${1%%=*}
  if [[ "$1" == *=* ]]; then value=${1#*=}; shift; else value=${2:-}; shift; [ $# -gt 0 ] && shift; fi
  [ "$flag" = --threads ] && threads=$value
  if [ -n "${keys[$flag]:-}" ]; then sets+=(--set "${keys[$flag]}=$value"); fi
done
scripts/build.sh bench_norm_impl >/dev/null
echo "== paired timing of the $model step (${IMPLS:-fused,composed}, $threads threads): $out/paired.jsonl"
mkdir -p "$out"
build/bin/bench_norm_impl --model "$model" --impl "${IMPLS:-fused,composed}" --threads "$threads" --pairs "${PAIRS:-20}" \
  --norms "${NORMS_TIMED:-none layernorm rmsnorm prmsnorm}" "${sets[@]}" > "$out/paired.jsonl.tmp"
mv "$out/paired.jsonl.tmp" "$out/paired.jsonl"
