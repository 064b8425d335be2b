#!/usr/bin/env bash
# One training step of each of the paper's models, ours (bench_step) against every peer in the same
# run: the PyTorch twin eager, the same twin under torch.compile (Inductor, its CPU backend) and, for
# RNNSearch and ConvPool-CNN-C, the JAX twin (jax.jit on XLA's CPU backend), at 1 and 2 threads, with
# one norm, in one table (bench/peers_table.py): the median over the rounds of each program's median
# step, and ours ÷ the fastest peer.
#
#   bench/bench_peers.sh    # MODELS="convpool order_embedding reader rnnsearch transformer lm"
#                           # THREADS="1 2" PRECISIONS=f32 ROUNDS=2 NORM=layernorm STEPS=5 WARMUP=2
#
# PRECISIONS="f32 bf16" also times every program with its products in bf16: ours with --precision
# bf16, the PyTorch twins under CPU autocast to bf16 (bench/torch_timing.py); the JAX twins have no
# autocast and run in f32 only.
#
# NO_COMPILE="reader ..." skips those models' compiled twin (its column then shows a dash): the
# reader's first compile takes ~20 minutes per thread count and precision.
#
# KEEP_LINES=FILE also appends every line to FILE (the table's input, kept after the run; several
# runs can add to one file and bench/peers_table.py FILE makes their table).
#
# ROUNDS interleaved rounds: each round runs every model at every thread count, ours and its peers one
# after the other, so that a drift of the machine's speed hits them alike. Every program runs at its
# recipe's sizes, bench_step's defaults (bench/model_steps/*_step.h), which are the twins' defaults
# too; the table compares the sizes and parameter counts the lines report with ours and names any
# peer that differs. The compiled twin compiles in its warm-up steps (at least one), the JAX twin in
# its first step, both outside the timing. The first compile of a recurrent twin, whose time loops
# unroll into one graph, takes minutes (the reader's 640 LSTM steps: ~20 min and ~5 GB on this VM);
# Inductor's caches (/tmp/torchinductor_$USER) let a later run of the same graph start in seconds.
# The JAX twins need `pip install "jax[cpu]"`; without jax their column stays empty. BUILD_DIR
# (default build) picks the build tree, built first as in the other wrappers unless SKIP_BUILD=1
# (then its bench_step is timed as it is).
set -euo pipefail
source "$(dirname "$0")/common.sh"

# peer MODEL COMMAND ...: runs one program; its JSON line is shown and kept in $lines with the model
# added ("bench_model": not every twin names its model). A program that fails is reported and skipped,
# its cell left empty, so that one peer's failure does not lose the rest of a long run.
peer() {
  local model=$1 line
  shift
  while IFS= read -r line; do
    echo "$line"
    if [[ $line == "{"* ]]; then
      echo "{\"bench_model\": \"$model\", ${line#\{}" | tee -a ${KEEP_LINES:+"$KEEP_LINES"} >>"$lines"
    fi
  done < <("$@" || echo "$0: failed: $*" >&2)
}

# The PyTorch twin of each model (bench_step's names), and which models have a JAX twin.
declare -A torch_twin=([convpool]=convpool_torch.py [order_embedding]=order_embedding_torch.py
  [reader]=attentive_reader_torch.py [rnnsearch]=rnnsearch_torch.py [transformer]=transformer_torch.py
  [lm]=lm_torch.py)
declare -A jax_twin=([convpool]=convpool_jax.py [rnnsearch]=rnnsearch_jax.py)

models=${MODELS:-convpool order_embedding reader rnnsearch transformer lm}
norm=${NORM:-layernorm}
steps=(--steps "${STEPS:-5}" --warmup "${WARMUP:-2}")
for model in $models; do
  [ -n "${torch_twin[$model]:-}" ] || { echo "$0: unknown model $model" >&2; exit 1; }
done
[ "${SKIP_BUILD:-0}" = 1 ] || build_bench bench_step
jax=$(jax_python) || true
[ -n "$jax" ] || echo "$0: no python3 here imports jax: no JAX column (pip install \"jax[cpu]\")" >&2

for _ in $(seq "${ROUNDS:-2}"); do
  for model in $models; do
    for t in ${THREADS:-1 2}; do
      for precision in ${PRECISIONS:-f32}; do
        p=(--precision "$precision")
        peer "$model" ours bench_step --model "$model" --norm "$norm" --threads "$t" "${p[@]}" "${steps[@]}"
        peer "$model" twin "$t" "${torch_twin[$model]}" --norm "$norm" "${p[@]}" "${steps[@]}"
        if [[ " ${NO_COMPILE:-} " != *" $model "* ]]; then
          peer "$model" twin "$t" "${torch_twin[$model]}" --compile --norm "$norm" "${p[@]}" "${steps[@]}"
        fi
        if [ -n "${jax_twin[$model]:-}" ] && [ -n "$jax" ] && [ "$precision" = f32 ]; then
          # The JAX twin sets XLA's thread count itself from --threads (see rnnsearch_jax.py).
          peer "$model" "$jax" "bench/${jax_twin[$model]}" --norm "$norm" --threads "$t" "${steps[@]}"
        fi
      done
    done
  done
done
echo
/usr/bin/python3 bench/peers_table.py "$lines"
