#!/usr/bin/env bash
# Paired step timing of two builds: every model's bench_step from OLD_BIN and
# from NEW_BIN, run in alternating processes (ROUNDS rounds, the order swapped
# every round), so that whatever else the machine does falls on both alike.
# Prints, per model, the median ms per step of each and their ratio new/old
# with the rounds' range of ratios.
#
#   scripts/compare_bench_step.sh OLD_BIN NEW_BIN [model ...]
#
# ROUNDS (default 6), STEPS (default 5), THREADS (default 1).
set -euo pipefail
old=${1:?usage: scripts/compare_bench_step.sh OLD_BIN NEW_BIN [model ...]}
new=${2:?usage: scripts/compare_bench_step.sh OLD_BIN NEW_BIN [model ...]}
shift 2
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(rnnsearch transformer reader order_embedding convpool)
rounds=${ROUNDS:-6} steps=${STEPS:-5} threads=${THREADS:-1}
time_one() {  # BIN MODEL -> ms per step
  "$1/bench_step" --model "$2" --threads "$threads" --steps "$steps" --warmup 2 2>/dev/null |
    python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["ms_per_step"])'
}
printf '%-16s %10s %10s %8s  %s\n' model old_ms new_ms new/old "range over $rounds rounds"
for model in "${models[@]}"; do
  olds=() news=()
  for ((r = 0; r < rounds; r++)); do
    if ((r % 2 == 0)); then o=$(time_one "$old" "$model"); n=$(time_one "$new" "$model")
    else n=$(time_one "$new" "$model"); o=$(time_one "$old" "$model"); fi
    olds+=("$o") news+=("$n")
  done
  python3 - "$model" "${olds[*]}" "${news[*]}" <<'PY'
import statistics as st, sys
model, olds, news = sys.argv[1], list(map(float, sys.argv[2].split())), list(map(float, sys.argv[3].split()))
ratios = [n / o for o, n in zip(olds, news)]
print(f"{model:16s} {st.median(olds):10.1f} {st.median(news):10.1f} {st.median(news) / st.median(olds):8.3f}  {min(ratios):.3f}-{max(ratios):.3f}")
PY
done
