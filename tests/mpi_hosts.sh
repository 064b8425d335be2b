#!/usr/bin/env bash
# Data-parallel training across a network: two hosts made of network
# namespaces (scripts/hosts.sh), the processes joined by TCP only.
#
#   1. Two hosts take the steps one process takes (cifar10 and rnnsearch, as
#      test_data_parallel checks over shared memory), and a run stopped at two
#      hosts resumes at one.
#   2. A process SIGKILLed mid-step ends the job (test_data_parallel's case).
#   3. A host whose link goes down mid-run ends the job within seconds, with a
#      message naming the host, and the last checkpoint resumes on the host
#      that remains.
#
# Needs root (namespaces, links): otherwise skipped (exit 77).
#
# Usage: tests/mpi_hosts.sh HOSTS_SH TEST_DATA_PARALLEL CIFAR10 RNNSEARCH
set -uo pipefail
hosts=$1 test_data_parallel=$2
declare -A bin=([cifar10]=$3 [rnnsearch]=$4)
declare -A args=(
  [cifar10]="--norm rmsnorm --width 0.125 --train-size 200 --valid-size 100 --batch 50 --zca off --threads 1"
  [rnnsearch]="--norm rmsnorm --embed 24 --hidden 24 --batch 16 --synthetic-max-words 6 --synthetic-pairs 300
               --valid-limit 20 --valid-beam 1 --beam 1 --eval-every 5 --threads 1"
)
export RG_HOSTS_NET=rgtest RG_HOSTS_SUBNET=10.78.0 OMP_NUM_THREADS=1
work=$(mktemp -d)
cleanup() { "$hosts" down; rm -rf "$work"; }
if [ "$(id -u)" != 0 ] || ! "$hosts" up 2 > "$work/up.log" 2>&1; then
  echo "SKIPPED: cannot make network namespaces here ($(tail -1 "$work/up.log" 2> /dev/null || echo "not root")); run as root"
  cleanup
  exit 77
fi
trap cleanup EXIT
fail=0

# 1 and 2: the same checks as over shared memory, through hosts.sh's launcher.
if RG_TEST_MPIRUN="$hosts mpirun" "$test_data_parallel" --subcase=cifar10,rnnsearch \
  --test-case="two processes take the steps one process takes*,when one process dies*" > "$work/same.log" 2>&1; then
  echo "PASS: two hosts over TCP train as one process does (cifar10, rnnsearch), resume at one, and end when a process dies ($(grep -o 'test cases:.*' "$work/same.log" | head -1))"
else
  echo "FAIL: test_data_parallel across two hosts:"; tail -40 "$work/same.log"; fail=1
fi

# 3: host2's link goes down once the run has a checkpoint.
for driver in cifar10 rnnsearch; do
  out=$work/$driver
  start=$(date +%s)
  # shellcheck disable=SC2086  # the arguments are words
  timeout 200 "$hosts" mpirun "${bin[$driver]}" ${args[$driver]} --steps 100000 --out "$out" \
    > "$work/$driver.out" 2> "$work/$driver.err" &
  job=$!
  for ((i = 0; i < 600; ++i)); do
    [ -f "$out/checkpoint.safetensors" ] && break
    sleep 0.1
  done
  sleep 1
  "$hosts" link 2 down
  down_at=$(date +%s)
  wait $job
  status=$?
  seconds=$(($(date +%s) - down_at))
  if [ ! -f "$out/checkpoint.safetensors" ]; then
    echo "FAIL: $driver: no checkpoint within 60 s of the start"; fail=1
  elif [ $status -eq 0 ] || [ $status -eq 124 ]; then
    echo "FAIL: $driver: the job exited $status (124: still running 200 s after the start)"; fail=1
  elif [ $seconds -gt 60 ]; then
    echo "FAIL: $driver: the job took $seconds s to end after the link went down"; fail=1
  elif ! grep -q "lost communication with a remote daemon" "$work/$driver.err" ||
    ! grep -q "on node $RG_HOSTS_SUBNET.2" "$work/$driver.err"; then
    echo "FAIL: $driver: no message naming host2 ($RG_HOSTS_SUBNET.2):"; cat "$work/$driver.err"; fail=1
  else
    echo "PASS: $driver: host2's link went down $((down_at - start)) s into the run; the job ended $seconds s later (exit $status), naming $RG_HOSTS_SUBNET.2"
    # shellcheck disable=SC2086
    last=$(tail -n 1 "$out/metrics.jsonl" | sed 's/^{"step":\([0-9]*\).*/\1/')
    # shellcheck disable=SC2086
    if "${bin[$driver]}" ${args[$driver]} --steps 100000 --stop-after $((last + 10)) --resume --out "$out" \
      > "$work/$driver.resume" 2>&1; then
      echo "PASS: $driver: the checkpoint resumes at one process"
    else
      echo "FAIL: $driver: resuming at one process failed:"; tail -5 "$work/$driver.resume"; fail=1
    fi
  fi
  "$hosts" link 2 up
done
exit $fail
