#!/usr/bin/env bash
# One training step of RNNSearch and of ConvPool-CNN-C in JAX (bench/rnnsearch_jax.py,
# bench/convpool_jax.py: jax.jit on XLA's CPU backend), with each norm, at 1 and 2 threads: the
# JAX lines to set beside ours (bench_step) and PyTorch's (bench_rnnsearch.sh, bench_convpool.sh).
# Each run prints one JSON line, "impl": "jax", with the torch twin's fields; the first call of each
# run compiles (its seconds are "compile_s") and is one of the untimed warm-up steps.
#
#   bench/bench_jax.sh        # THREADS="1 2" MODELS="rnnsearch convpool" ROUNDS=1
#                             # RNNSEARCH_NORMS="none layernorm rmsnorm prmsnorm" STEPS=5 WARMUP=2
#                             # CONVPOOL_NORMS="none layernorm rmsnorm prmsnorm batchnorm weightnorm"
#                             # WIDTH=0.5 CONVPOOL_STEPS=10 RNNSEARCH_FLAGS= CONVPOOL_FLAGS=
#
# The sizes are the torch twins' defaults (RNNSearch: batch 80, sentences of 13-22 subwords,
# vocabulary 8000, 256 units; ConvPool: width 0.5, batch 100); RNNSEARCH_FLAGS and CONVPOOL_FLAGS
# add flags to every run of one twin (e.g. RNNSEARCH_FLAGS="--batch 8 --vocab 500" for a quick try).
# A table of the median over the rounds ends the output. Each twin sets XLA's thread count
# itself from --threads (PJRT_NPROC, and --xla_cpu_multi_thread_eigen=false at 1 thread; see
# rnnsearch_jax.py's docstring). The JAX twins need `pip install "jax[cpu]"`: the python3 that
# imports jax runs them (the one on PATH first, else Debian's).
#
# That each computes our model: bench_step --model rnnsearch --dump DIR --norm N (small sizes), then
# rnnsearch_jax.py --check DIR; bench_step --model convpool --dump DIR --norm N,
# then convpool_jax.py --check DIR (the usage is in each twin's docstring).
set -euo pipefail
source "$(dirname "$0")/common.sh"

python=$(jax_python) || { echo "$0: no python3 here imports jax (pip install \"jax[cpu]\")" >&2; exit 1; }
models=${MODELS:-rnnsearch convpool}
for _ in $(seq "${ROUNDS:-1}"); do
  for t in ${THREADS:-1 2}; do
    if [[ " $models " == *" rnnsearch "* ]]; then
      for norm in ${RNNSEARCH_NORMS:-none layernorm rmsnorm prmsnorm}; do
        # shellcheck disable=SC2086  # the extra flags are words
        "$python" bench/rnnsearch_jax.py --norm "$norm" --threads "$t" \
          --steps "${STEPS:-5}" --warmup "${WARMUP:-2}" ${RNNSEARCH_FLAGS:-} | tee -a "$lines"
      done
    fi
    if [[ " $models " == *" convpool "* ]]; then
      for norm in ${CONVPOOL_NORMS:-none layernorm rmsnorm prmsnorm batchnorm weightnorm}; do
        # shellcheck disable=SC2086
        "$python" bench/convpool_jax.py --norm "$norm" --threads "$t" --width "${WIDTH:-0.5}" \
          --steps "${CONVPOOL_STEPS:-10}" --warmup "${WARMUP:-2}" ${CONVPOOL_FLAGS:-} | tee -a "$lines"
      done
    fi
  done
done
echo
show_table <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    if line.strip():
        r = json.loads(line)
        model = "convpool" if "width" in r else "rnnsearch"
        runs.setdefault((model, r["threads"], r["norm"]), []).append(r.get("ms_per_step", r.get("step_ms")))
print("| model | threads | norm | JAX ms/step |")
print("|---|---|---|---|")
for (model, threads, norm), ms in runs.items():
    print(f"| {model} | {threads} | {norm} | {statistics.median(ms):.1f} |")
PY
