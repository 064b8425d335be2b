#!/usr/bin/env bash
# A process that does not arrive at a collective must not hang the job: the
# others give up at the deadline, name it, and end the job.
#
#   1. rank 1 skips a sum (tests/mpi_deadline_probe.cpp), deadline 3 s;
#   2. a training run (cifar10, --collective-deadline 0.1 minutes) whose
#      rank 1 is stopped (SIGSTOP: alive, never arriving) after a few steps.
#
# Each must end within its deadline plus a few seconds, exit non-zero, and
# print one message naming the collective and rank 1 with its host.
#
# Usage: tests/mpi_deadline.sh MPIEXEC PROBE CIFAR10
set -uo pipefail
mpiexec=$1 probe=$2 cifar10=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

# expect NAME LIMIT_SECONDS PATTERN COMMAND...: the command fails within LIMIT seconds and its
# stderr has a line "error: ..." matching PATTERN.
expect() {
  local name=$1 limit=$2 pattern=$3 start status seconds
  shift 3
  start=$(date +%s)
  timeout 300 "$@" > "$work/$name.out" 2> "$work/$name.err"
  status=$?
  seconds=$(($(date +%s) - start))
  if [ $status -eq 0 ] || [ $status -eq 124 ]; then
    echo "FAIL: $name: the job exited $status (124: still running after 300 s)"; fail=1
  elif [ $seconds -gt "$limit" ]; then
    echo "FAIL: $name: the job took $seconds s to end, more than $limit"; fail=1
  elif ! grep -E "^error: .*$pattern" "$work/$name.err" > "$work/$name.message"; then
    echo "FAIL: $name: no message matching '$pattern' in:"; cat "$work/$name.err"; fail=1
  else
    echo "PASS: $name: ended in $seconds s (exit $status): $(head -1 "$work/$name.message")"
  fi
}

expect skipped_sum 15 \
  "rank 0 of 2 \(.*\): the sum of 1 value has waited 3 s \(collective #[0-9]+ of this process\), past the deadline of 3 s .* Not arrived: rank 1 of 2 \(.*\), which did not answer" \
  "$mpiexec" --oversubscribe -np 2 "$probe" 3

# Rank 1 stops after 5 s, at whatever point of its run; rank 0 waits 6 s in
# its next collective, whichever that is: mostly a step's gradient sum ("the
# gradient sum of bucket 2 of 3 (1234 values)"), on a fast machine also the
# replicas' checksum at a validation ("the gathering of every rank's text (38
# bytes in all)"). The message must name it, its number and rank 1.
expect stopped_rank 40 \
  "rank 0 of 2 \(.*\): [a-z].+ has waited 6 s \(collective #[0-9]+ of this process\), past the deadline of 6 s .* Not arrived: rank 1 of 2 \(.*\), which did not answer" \
  "$mpiexec" --oversubscribe -np 2 sh -c 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then (sleep 5; kill -STOP $$) & fi;
    exec '"$cifar10"' --norm rmsnorm --width 0.125 --train-size 200 --valid-size 100 --batch 50 --zca off --threads 1 \
      --steps 100000 --collective-deadline 0.1 --out '"$work/run"
exit $fail
