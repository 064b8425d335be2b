#!/usr/bin/env bash
# A user's own training loop on a shared machine: bench_own_loop (a
# character GRU trained with the README's calls only, 2 threads) alone and
# beside one competing single-threaded process (a busy loop), in alternating
# rounds, then the median ms per step of each and shared ÷ alone. The
# competitor takes one of the two cores, so the step can take at most about
# twice as long when the program gives that core up; much more means its
# threads wait for each other while one of them is not running.
#
#   bench/bench_own_loop.sh [PROGRAM ...]    # default build/bin/bench_own_loop; ROUNDS=4, STEPS=30
#
# Given several programs (the same source built against two versions of the
# library), each is timed in every round, in turn; and each in every mode of
# MODES (default: the loop as written, with --polite, and with --polite
# --follow; modes separated by commas).
set -euo pipefail
source "$(dirname "$0")/common.sh"
programs=("$@")
if [ ${#programs[@]} -eq 0 ]; then
  build_bench bench_own_loop
  programs=("$build/bin/bench_own_loop")
fi
IFS=, read -r -a modes <<< "${MODES:-,--polite,--polite --follow}"
for _ in $(seq "${ROUNDS:-4}"); do
  for program in "${programs[@]}"; do
    for mode in "${modes[@]}"; do
      # shellcheck disable=SC2086  # a mode is several flags
      alone_and_shared "\"program\": \"$program $mode\", " "$program" --threads 2 --steps "${STEPS:-30}" $mode
    done
  done
done
echo
/usr/bin/python3 bench/alone_shared_table.py "$lines" program "alone ms" "shared ms" 1
