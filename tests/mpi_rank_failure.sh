#!/usr/bin/env bash
# One process of a data-parallel job fails mid-run: the whole job must end
# within seconds, with that process's message, for every driver. The failure
# is a full disk at rank 0's checkpoint (rank 1 is then already waiting for it
# in the next step's gradient sum, where it would wait forever unless
# run_main ends the job).
#
# Each driver first trains two steps alone (one checkpoint) on a small tmpfs;
# the disk is then filled but for a few KiB (room for log lines, not for a
# checkpoint), and the run is resumed under `mpirun -np 2`: its next
# validation, at step 4, cannot save.
#
# Mounting a tmpfs needs root (or CAP_SYS_ADMIN): without it the test is
# skipped (exit 77, which CTest reports as skipped).
#
# Usage: tests/mpi_rank_failure.sh MPIEXEC CIFAR10 ORDER_EMBEDDING ATTENTIVE_READER RNNSEARCH TRANSFORMER
set -uo pipefail
mpiexec=$1
declare -A bin=([cifar10]=$2 [order_embedding]=$3 [attentive_reader]=$4 [rnnsearch]=$5 [transformer]=$6)
declare -A args=(
  [cifar10]="--norm rmsnorm --width 0.125 --train-size 100 --batch 50 --valid-size 50 --zca off"
  [order_embedding]="--embed-dim 32 --word-dim 16 --synthetic-images 200 --synthetic-dim 32 --batch 32 --eval-every 2"
  [attentive_reader]="--embed 16 --hidden 16 --batch 8 --synthetic-questions 200 --eval-every 2"
  [rnnsearch]="--embed 24 --hidden 24 --batch 16 --synthetic-max-words 6 --synthetic-pairs 300 --valid-limit 20
               --valid-beam 1 --beam 1 --eval-every 2"
  [transformer]="--model-size 32 --ffn 64 --layers 1 --batch-tokens 1000 --warmup 10 --synthetic-max-words 6
                 --synthetic-pairs 300 --valid-limit 20 --valid-beam 1 --beam 1 --eval-every 2"
)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
work=$(mktemp -d)
disk=$work/disk
mkdir -p "$disk"
cleanup() { umount "$disk" 2> /dev/null; rm -rf "$work"; }
trap cleanup EXIT
if ! mount -t tmpfs -o size=48m tmpfs "$disk" 2> "$work/mount.err"; then
  echo "SKIPPED: cannot mount a tmpfs to fill ($(cat "$work/mount.err")); run as root to test a rank that fails"
  exit 77
fi

fail=0
for driver in cifar10 order_embedding attentive_reader rnnsearch transformer; do
  out=$disk/$driver
  # shellcheck disable=SC2086  # the arguments are words
  if ! "${bin[$driver]}" ${args[$driver]} --threads 1 --log-every 1 --steps 1000 --stop-after 2 --out "$out" > "$work/$driver.first" 2>&1; then
    echo "FAIL: $driver: the first run failed"; tail -3 "$work/$driver.first"; fail=1; continue
  fi
  dd if=/dev/zero of="$disk/filler" bs=4096 > /dev/null 2>&1
  truncate -s -16K "$disk/filler"
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout 120 "$mpiexec" --oversubscribe -np 2 "${bin[$driver]}" ${args[$driver]} --threads 1 --log-every 1 \
    --steps 1000 --resume --out "$out" > "$work/$driver.out" 2> "$work/$driver.err"
  status=$?
  seconds=$(($(date +%s) - start))
  rm -f "$disk/filler"
  message=$(grep '^error: ' "$work/$driver.err" | head -1)
  if [ $status -eq 0 ] || [ $status -eq 124 ]; then
    echo "FAIL: $driver: the job exited $status (124: still running after 120 s)"; fail=1
  elif [ "$seconds" -gt 60 ]; then
    echo "FAIL: $driver: the job took $seconds s to end"; fail=1
  elif ! echo "$message" | grep -q "^error: rank 0 of 2 (.*): .*\.safetensors.*No space left on device"; then
    echo "FAIL: $driver: expected rank 0's full-disk error, got:"; cat "$work/$driver.err"; fail=1
  else
    echo "PASS: $driver: the job ended in $seconds s (exit $status): $message"
  fi
  rm -rf "$out"
done
exit $fail
