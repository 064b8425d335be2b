#!/usr/bin/env bash
# One process of a data-parallel job stops before training: its flags are
# wrong, its --config is missing, or it prints --help. The whole job must end
# within seconds (not at the collective deadline), non-zero, with one
# "error:" line, and no run directory made. Every process takes part in the
# start (dist/process_group.h) before its first collective, and one that
# stops says so there.
#
# Usage: tests/mpi_start.sh MPIEXEC CIFAR10 ORDER_EMBEDDING ATTENTIVE_READER RNNSEARCH TRANSFORMER LM
set -uo pipefail
mpiexec=$1
declare -A bin=([cifar10]=$2 [order_embedding]=$3 [attentive_reader]=$4 [rnnsearch]=$5 [transformer]=$6 [lm]=$7)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -A stops=(
  [flag]="--seed x"
  [config]="--config $work/missing.toml"
  [help]="--help"
)
fail=0
for driver in cifar10 order_embedding attentive_reader rnnsearch transformer lm; do
  for stop in flag config help; do
    out=$work/$driver-$stop
    start=$(date +%s)
    # shellcheck disable=SC2086  # the flags are words
    timeout 60 "$mpiexec" --oversubscribe -np 1 "${bin[$driver]}" --threads 1 --out "$out" : \
      -np 1 "${bin[$driver]}" --threads 1 --out "$out" ${stops[$stop]} > "$work/out" 2> "$work/err"
    status=$?
    seconds=$(($(date +%s) - start))
    errors=$(grep -c '^error: ' "$work/err")
    if [ $status -eq 0 ] || [ $status -eq 124 ]; then
      echo "FAIL: $driver, $stop on rank 1: the job exited $status (124: still running after 60 s)"; fail=1
    elif [ "$seconds" -gt 20 ]; then
      echo "FAIL: $driver, $stop on rank 1: the job took $seconds s to end"; fail=1
    elif [ "$errors" -ne 1 ]; then
      echo "FAIL: $driver, $stop on rank 1: $errors error lines, expected one:"; cat "$work/err"; fail=1
    elif [ -e "$out" ]; then
      echo "FAIL: $driver, $stop on rank 1: the run directory was made"; fail=1
    else
      echo "PASS: $driver, $stop on rank 1: ended in $seconds s (exit $status): $(grep '^error: ' "$work/err")"
    fi
  done
done
# Every rank stops alike (the same bad flag), or rank 0 alone prints --help:
# one "error:" line for the job, not one a rank (nor two run together).
for driver in cifar10 attentive_reader; do
  for case in same help0; do
    out=$work/$driver-$case
    if [ $case = same ]; then
      timeout 60 "$mpiexec" --oversubscribe -np 2 "${bin[$driver]}" --threads 1 --out "$out" \
        --collective-deadline nan > "$work/out" 2> "$work/err"
    else
      timeout 60 "$mpiexec" --oversubscribe -np 1 "${bin[$driver]}" --threads 1 --out "$out" --help : \
        -np 1 "${bin[$driver]}" --threads 1 --out "$out" > "$work/out" 2> "$work/err"
    fi
    status=$?
    errors=$(grep -c '^error: ' "$work/err")
    if [ $status -eq 0 ] || [ $status -eq 124 ]; then
      echo "FAIL: $driver, $case: the job exited $status"; fail=1
    elif [ "$errors" -ne 1 ] || [ "$(grep -o 'error: ' "$work/err" | wc -l)" -ne 1 ]; then
      echo "FAIL: $driver, $case: $errors error lines, expected one:"; cat "$work/err"; fail=1
    elif [ $case = same ] && grep -q '^error: rank ' "$work/err"; then
      echo "FAIL: $driver, $case: every rank had the error, yet it names a rank:"; cat "$work/err"; fail=1
    else
      echo "PASS: $driver, $case: exit $status: $(grep '^error: ' "$work/err")"
    fi
  done
done
exit $fail
