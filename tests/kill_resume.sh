#!/usr/bin/env bash
# Crash-safe checkpoints, proven: a small CIFAR-10 run on the synthetic images
# is killed with SIGKILL again and again, and resumed with --resume after
# every kill, until it finishes. Then
#   - every resume loaded the checkpoint the kill left (none was unreadable),
#   - the logged losses (train and validation, step by step) equal those of
#     the same run never killed, bit for bit (one thread).
# Kills come three ways, in turn:
#   - after a random delay (anywhere: start-up, a step, an evaluation, a save);
#   - inside the checkpoint write, at the k-th write(2) the process makes
#     (strace's syscall fault injection delivers SIGKILL on that call);
#   - at the fsync(2) or rename(2) of a checkpoint save, k chosen at random:
#     the temporary file is written, the rename not yet done.
# Without strace (or when ptrace is not permitted) only the random kills run.
#
# Rounds of this (each a fresh run killed until it finishes) repeat until the
# time budget is spent.
#
# Usage: tests/kill_resume.sh <cifar10 binary> [seconds, default 120]
set -uo pipefail
bin=$1
budget=${2:-120}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
args=(--width 0.1 --train-size 40 --batch 20 --valid-size 20 --eval-batch 20 --epochs 30 --threads 1
      --log-every 1 --zca off --seed 7)

# The step, split and loss of every metrics line, in file order.
losses() { grep -o '"step":[0-9]*,"split":"[a-z]*","loss":[^,}]*' "$1"; }

"$bin" "${args[@]}" --out "$work/reference" > "$work/reference.out" 2>&1 || {
  echo "FAIL: the reference run failed:"; tail -5 "$work/reference.out"; exit 1; }
reference_seconds=$SECONDS

strace_works=0
if command -v strace > /dev/null && strace -f -o /dev/null -e trace=none true 2> /dev/null; then strace_works=1; fi
[ $strace_works -eq 1 ] || echo "note: strace is missing or not permitted; only random-delay kills"
# LeakSanitizer cannot run under ptrace: in a sanitizer build the strace'd runs
# check everything but leaks (the other runs, and the rest of the suite, do).
no_leak_check="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

kills=0 inside_write=0 resumes=0 rounds=0
RANDOM=26
exec 2> /dev/null  # bash's "Killed" notices; failures are reported on stdout
# One round: a fresh run killed and resumed until it finishes, then compared.
killed_round() {
  local run=$1 attempt=0 mode k status calls pid
  local checkpoint=$run/checkpoint.safetensors temporary=$run/.checkpoint.safetensors.tmp
  while :; do
    attempt=$((attempt + 1))
    # Killed before its first checkpoint, the run starts afresh over its own
    # logs (--overwrite moves them aside), as a user would restart it.
    resume=()
    [ $attempt -gt 1 ] && resume=(--overwrite)
    if [ -f "$checkpoint" ]; then resume=(--resume); resumes=$((resumes + 1)); fi
    mode=$((attempt % 3))
    [ $strace_works -eq 1 ] || mode=0
    [ $SECONDS -gt "$budget" ] && mode=finish   # out of time: let the run end
    case $mode in
      0)  # a random moment: 0 to ~1.5 s after start
        "$bin" "${args[@]}" "${resume[@]}" --out "$run" > "$work/last.out" 2>&1 &
        pid=$!
        sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
        [ $((RANDOM % 2)) -eq 0 ] && sleep 0.$((RANDOM % 10))
        kill -KILL $pid
        wait $pid
        status=$? ;;
      1)  # the k-th write(2): log lines, metrics and checkpoint data alike
        k=$((1 + RANDOM % 300))
        env "$no_leak_check" strace -f -o /dev/null -e trace=write -e inject=write:signal=KILL:when=$k \
          "$bin" "${args[@]}" "${resume[@]}" --out "$run" > "$work/last.out" 2>&1
        status=$? ;;
      2)  # a checkpoint's fsync or rename
        k=$((1 + RANDOM % 6))
        calls=fsync,rename,renameat,renameat2
        env "$no_leak_check" strace -f -o /dev/null -e trace=$calls -e inject=$calls:signal=KILL:when=$k \
          "$bin" "${args[@]}" "${resume[@]}" --out "$run" > "$work/last.out" 2>&1
        status=$? ;;
      finish)
        "$bin" "${args[@]}" "${resume[@]}" --out "$run" > "$work/last.out" 2>&1
        status=$? ;;
    esac
    [ $status -eq 0 ] && return 0
    if [ $status -ne 137 ]; then
      echo "FAIL: attempt $attempt of round $rounds (mode $mode${resume:+, ${resume[0]}}) exited with $status, not by SIGKILL:"
      tail -5 "$work/last.out"
      exit 1
    fi
    kills=$((kills + 1))
    [ -e "$temporary" ] && inside_write=$((inside_write + 1))
    if [ $attempt -gt 400 ]; then echo "FAIL: the run never finished"; exit 1; fi
  done
}

# Rounds until the time budget is spent (at least one).
while [ $rounds -eq 0 ] || [ $SECONDS -lt "$budget" ]; do
  rounds=$((rounds + 1))
  run=$work/killed$rounds
  killed_round "$run"
  if ! diff <(losses "$work/reference/metrics.jsonl") <(losses "$run/metrics.jsonl") > "$work/diff"; then
    echo "FAIL: round $rounds, killed and resumed, logged different losses than the reference:"
    head -20 "$work/diff"
    exit 1
  fi
  rm -rf "$run"
done
lines=$(losses "$work/reference/metrics.jsonl" | wc -l)
echo "PASS: $rounds rounds, $kills kills ($inside_write inside a checkpoint write, its temporary file left behind),"
echo "      $resumes resumes, every checkpoint readable; each round's $lines logged losses equal the un-killed"
echo "      run's bit for bit (reference run ${reference_seconds}s, total ${SECONDS}s)"
