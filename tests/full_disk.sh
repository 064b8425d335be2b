#!/usr/bin/env bash
# A full disk while saving a checkpoint: the run must stop with one clear
# error naming the checkpoint and the cause, and the previous checkpoint must
# stay byte for byte as it was (the new one is written to a temporary file,
# which is removed, and only renamed over the old one once complete).
#
# And a write of train.log that fails (here under a file-size limit, which
# needs no root): one error line naming train.log, not the same line twice.
#
# The disk is a small tmpfs; mounting one needs root (or CAP_SYS_ADMIN).
# Without it that part is skipped (exit 77, which CTest reports as skipped).
#
# Usage: tests/full_disk.sh <cifar10 binary>
set -uo pipefail
bin=$1
work=$(mktemp -d)
disk=$work/disk
mkdir -p "$disk"
cleanup() { umount "$disk" 2> /dev/null; rm -rf "$work"; }
trap cleanup EXIT
export OMP_NUM_THREADS=1

# train.log at a 64 KiB file-size limit: the resumed run's first lines cannot be appended.
log_args=(--width 0.1 --train-size 40 --batch 20 --valid-size 20 --eval-batch 20 --epochs 4 --threads 1 --zca off
          --out "$work/log_run")
"$bin" "${log_args[@]}" --stop-after 2 > "$work/log_first.out" 2>&1 ||
  { echo "FAIL: the first run failed"; cat "$work/log_first.out"; exit 1; }
truncate -s 64K "$work/log_run/train.log"
(ulimit -f 64; exec "$bin" "${log_args[@]}" --resume) > "$work/log_second.out" 2> "$work/log_second.err"
status=$?
message=$(cat "$work/log_second.err")
[ $status -eq 1 ] || { echo "FAIL: a failing write of train.log exited $status, not 1: $message"; exit 1; }
[ "$(grep -c '^error: ' "$work/log_second.err")" -eq 1 ] ||
  { echo "FAIL: expected one 'error:' line, got: $message"; exit 1; }
echo "$message" | grep -q "train.log': File too large" ||
  { echo "FAIL: the error does not name train.log and the cause: $message"; exit 1; }
echo "PASS: a failing write of train.log -> '$message'"

if ! mount -t tmpfs -o size=4m tmpfs "$disk" 2> "$work/mount.err"; then
  echo "SKIPPED: cannot mount a tmpfs to fill ($(cat "$work/mount.err")); run as root to test a full disk"
  exit 77
fi
args=(--width 0.25 --train-size 40 --batch 20 --valid-size 20 --eval-batch 20 --epochs 4 --threads 1 --zca off
      --seed 3 --out "$disk/run")

# A first run stops after step 2 (one epoch): its checkpoint is the one to keep.
"$bin" "${args[@]}" --stop-after 2 > "$work/first.out" 2>&1 || { echo "FAIL: the first run failed"; cat "$work/first.out"; exit 1; }
checkpoint=$disk/run/checkpoint.safetensors
before=$(sha256sum < "$checkpoint")
size=$(stat -c %s "$checkpoint")

# Fill the disk, then free a little: room for log lines, not for a checkpoint.
dd if=/dev/zero of="$disk/filler" bs=4096 > /dev/null 2>&1
free_kb=16
[ "$size" -gt $((4 * free_kb * 1024)) ] || { echo "FAIL: the checkpoint ($size bytes) is too small for this test"; exit 1; }
truncate -s -$((free_kb * 1024)) "$disk/filler"

"$bin" "${args[@]}" --resume > "$work/second.out" 2> "$work/second.err"
status=$?
message=$(cat "$work/second.err")
after=$(sha256sum < "$checkpoint")
fail=0
[ $status -ne 0 ] || { echo "FAIL: the run on a full disk exited 0"; fail=1; }
[ "$(grep -c '^error: ' "$work/second.err")" -eq 1 ] || { echo "FAIL: expected one 'error:' line, got: $message"; fail=1; }
echo "$message" | grep -q "checkpoint.safetensors" || { echo "FAIL: the error does not name the checkpoint: $message"; fail=1; }
echo "$message" | grep -q "No space left on device" || { echo "FAIL: the error does not give the cause: $message"; fail=1; }
[ "$before" = "$after" ] || { echo "FAIL: the previous checkpoint was changed"; fail=1; }
[ ! -e "$disk/run/.checkpoint.safetensors.tmp" ] || { echo "FAIL: the temporary file was left behind"; fail=1; }
# And the kept checkpoint still resumes, once there is room again.
rm "$disk/filler"
"$bin" "${args[@]}" --resume > "$work/third.out" 2>&1 || { echo "FAIL: resuming after freeing space failed"; tail -3 "$work/third.out"; fail=1; }
[ $fail -eq 0 ] || exit 1
echo "PASS: full disk -> '$message' (exit $status); the previous checkpoint ($size bytes) is unchanged and resumes"
