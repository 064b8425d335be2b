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
#      that remains — also when the host cut off is rank 0's.
#
# Needs root (namespaces, links): otherwise skipped (exit 77).
#
# Usage: tests/mpi_hosts.sh HOSTS_SH TEST_DATA_PARALLEL CIFAR10 RNNSEARCH
set -uo pipefail
hosts=$1 test_data_parallel=$2
declare -A bin=([cifar10]=$3 [rnnsearch]=$4)
declare -A args=(
  [cifar10]="--norm rmsnorm --width 0.125 --train-size 200 --valid-size 100 --batch 50 --zca off --threads 1
             --epochs 100000"
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

# 3: a host's link goes down once the run has a checkpoint. mpirun loses that
# host's daemon and ends the job; the processes on the other host go with it.
# A process on the host that was cut off cannot hear that: it ends itself at
# its collective deadline (here 15 s) and frees the run folder. Host 2 for
# both drivers, host 1 (rank 0, the writer) for cifar10.
link_down() {
  local driver=$1 host=$2 name=$1-host$2 out status seconds start down_at last
  out=$work/$name
  start=$(date +%s)
  # shellcheck disable=SC2086  # the arguments are words
  timeout 200 "$hosts" mpirun "${bin[$driver]}" ${args[$driver]} --steps 100000 --collective-deadline 0.25 \
    --out "$out" > "$work/$name.out" 2> "$work/$name.err" &
  local job=$!
  for ((i = 0; i < 600; ++i)); do
    [ -f "$out/checkpoint.safetensors" ] && break
    sleep 0.1
  done
  sleep 1
  "$hosts" link "$host" down
  down_at=$(date +%s)
  wait $job
  status=$?
  seconds=$(($(date +%s) - down_at))
  if [ ! -f "$out/checkpoint.safetensors" ]; then
    echo "FAIL: $name: no checkpoint within 60 s of the start"; fail=1
  elif [ $status -eq 0 ] || [ $status -eq 124 ]; then
    echo "FAIL: $name: the job exited $status (124: still running 200 s after the start)"; fail=1
  elif [ $seconds -gt 60 ]; then
    echo "FAIL: $name: the job took $seconds s to end after the link went down"; fail=1
  elif ! grep -q "lost communication with a remote daemon" "$work/$name.err" ||
    ! grep -q "on node $RG_HOSTS_SUBNET.$host" "$work/$name.err"; then
    echo "FAIL: $name: no message naming host$host ($RG_HOSTS_SUBNET.$host):"; cat "$work/$name.err"; fail=1
  else
    echo "PASS: $name: host$host's link went down $((down_at - start)) s into the run; the job ended $seconds s later (exit $status), naming $RG_HOSTS_SUBNET.$host"
    # Resumed at one process, once the run folder is free (within the deadline, the wait for
    # answers and the 10 s that a process gives MPI_Abort).
    last=$(tail -n 1 "$out/metrics.jsonl" | sed 's/^{"step":\([0-9]*\).*/\1/')
    local resumed=1
    for ((i = 0; i < 30; ++i)); do
      # shellcheck disable=SC2086
      if "${bin[$driver]}" ${args[$driver]} --steps 100000 --stop-after $((last + 10)) --resume --out "$out" \
        > "$work/$name.resume" 2>&1; then
        resumed=0
        break
      fi
      grep -q "another run" "$work/$name.resume" || break
      sleep 2
    done
    if [ $resumed = 0 ]; then
      echo "PASS: $name: the checkpoint resumes at one process, $(($(date +%s) - down_at)) s after the link went down"
    else
      echo "FAIL: $name: resuming at one process failed:"; tail -5 "$work/$name.resume"; fail=1
    fi
  fi
  "$hosts" link "$host" up
}
link_down cifar10 2
link_down rnnsearch 2
link_down cifar10 1
exit $fail
