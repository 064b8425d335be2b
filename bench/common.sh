# shellcheck shell=bash
# What the bench/*.sh wrappers share: sourced, not run, as
#
#   source "$(dirname "$0")/common.sh"
#
# Sourcing it moves to the repository root (every path below is relative to it) and makes a scratch
# folder, removed when the wrapper exits, whose $lines file collects the JSON lines the wrapper's
# runs print, for its table. BUILD_DIR (default build) picks the build tree the programs come from.
#
# A wrapper times one of our bench programs ("ours") and its PyTorch twin (bench/*_torch.py) in the
# same run, one after the other, at the same thread count: this VM's speed drifts by 10–30% from one
# minute to the next, so two runs minutes apart compare two different machines.

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit
build=${BUILD_DIR:-build}
scratch=$(mktemp -d)
competitor=""
trap 'stop_competitor 2>/dev/null || true; rm -rf "$scratch"' EXIT
lines=$scratch/lines.jsonl

# start_competitor, stop_competitor: one competing single-threaded process, a busy loop that takes a
# core, beside the program timed "shared" rather than "alone"; ended at exit too.
start_competitor() {
  (while :; do :; done) &
  competitor=$!
}
stop_competitor() {
  [ -n "$competitor" ] || return 0
  kill "$competitor"
  wait "$competitor" 2>/dev/null || true
  competitor=""
}

# alone_and_shared FIELDS COMMAND ...: runs COMMAND alone, then beside the competitor; each JSON line
# it prints starts with FIELDS ("" or '"key": value, ') and "setting" (alone or shared), shown and kept
# in $lines.
alone_and_shared() {
  local fields=$1 setting
  shift
  for setting in alone shared; do
    if [ "$setting" = shared ]; then start_competitor; fi
    "$@" | sed "s|^{|{$fields\"setting\": \"$setting\", |" | tee -a "$lines"
    stop_competitor
  done
}

# build_bench TARGET: builds one bench program, quietly. scripts/build.sh configures the default
# tree (Release) first; another BUILD_DIR must be configured already.
build_bench() {
  if [ "$build" = build ]; then
    scripts/build.sh "$1" >/dev/null
  else
    cmake --build "$build" --target "$1" >/dev/null
  fi
}

# torch_python: prints the Python that can import torch. Debian's python3-torch (/usr/bin/python3)
# first, as the twins' usage lines name it; else the python3 on PATH (a pip or pyenv install).
# find_spec looks torch up without importing it, which alone takes seconds.
torch_python() {
  local python
  for python in /usr/bin/python3 python3; do
    if "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' \
      2>/dev/null; then
      echo "$python"
      return
    fi
  done
  echo "$0: no python3 here imports torch (Debian's python3-torch, or pip install torch)" >&2
  return 1
}

# jax_python: prints the Python that can import jax (the one on PATH first, as pip installs it there), or
# nothing and fails when none can. find_spec looks it up without importing it.
jax_python() {
  local python
  for python in python3 /usr/bin/python3; do
    if "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("jax") is None)' \
      2>/dev/null; then
      echo "$python"
      return
    fi
  done
  return 1
}

# ours PROGRAM FLAG ...: runs our build's bench PROGRAM.
ours() {
  "$build/bin/$1" "${@:2}"
}

# twin THREADS SCRIPT FLAG ...: runs the PyTorch twin bench/SCRIPT at THREADS threads. The twin sets
# torch's own pool from --threads; OMP_NUM_THREADS holds the OpenMP libraries below torch to the same.
twin() {
  local threads=$1 script=$2 python
  python=$(torch_python)
  OMP_NUM_THREADS=$threads "$python" "bench/$script" --threads "$threads" "${@:3}"
}

# op_sweep PROGRAM TWIN: one per-op bench and its twin, at 1 and then 2 threads, their lines shown
# and kept in $lines; a blank line after them, before the wrapper's table.
op_sweep() {
  local t
  build_bench "$1"
  for t in 1 2; do
    ours "$1" --threads "$t" | tee -a "$lines"
    twin "$t" "$2" | tee -a "$lines"
  done
  echo
}

# model_sweep MODEL TWIN NORMS VARIANTS [FLAG ...]: one training step of MODEL timed by bench_step and
# by its twin bench/TWIN, for each norm at each thread count, both given --norm, --threads and
# FLAG ...; the lines shown and kept in $lines, then a blank line. VARIANTS, "" or a list of
# key=value (e.g. "method=order method=cosine"), adds a loop over one setting of the model, which
# bench_step takes as --set key=value and the twin as --key value.
# ROUNDS (default 2) repeats the whole sweep, ours and PyTorch's taking turns norm by norm, so that a
# drift of the machine's speed hits both alike; THREADS (default "1 2") and NORMS (default NORMS)
# narrow it.
model_sweep() {
  local model=$1 twin_script=$2 norms=${NORMS:-$3} variants t variant norm
  read -ra variants <<<"$4"
  [ ${#variants[@]} -gt 0 ] || variants=("")
  shift 4
  build_bench bench_step
  for _ in $(seq "${ROUNDS:-2}"); do
    for t in ${THREADS:-1 2}; do
      for variant in "${variants[@]}"; do
        for norm in $norms; do
          ours bench_step --model "$model" --norm "$norm" --threads "$t" ${variant:+--set "$variant"} "$@" |
            tee -a "$lines"
          twin "$t" "$twin_script" --norm "$norm" ${variant:+"--${variant%%=*}" "${variant#*=}"} "$@" |
            tee -a "$lines"
        done
      done
    done
  done
  echo
}

# show_table: runs the Python program on standard input (the wrapper's heredoc) with $lines as
# sys.argv[1]. The tables need no torch: Debian's python3.
show_table() {
  /usr/bin/python3 - "$lines"
}
