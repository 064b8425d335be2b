#!/usr/bin/env bash
# One training step of the bidirectional attentive reader (batch 64, word
# vectors 240, LSTMs of 240 units, documents of 250–300 tokens, queries of
# 12–20, 10 candidates, vocabulary 10000, dropout 0.5, global clip 10, Adam),
# ours against the same model in PyTorch (bench/attentive_reader_torch.py),
# with each norm inside the LSTMs, at 1 and 2 threads, in the same run.
# ROUNDS (default 2) interleaved rounds, median of the rounds' medians.
# BUILD_DIR (default build) picks the build tree, configured by
# scripts/build.sh when it is the default.
#
#   bench/bench_attentive_reader.sh            # THREADS="1 2" NORMS=... ROUNDS=2 STEPS=5 WARMUP=2
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
if [ "$build" = build ]; then
  scripts/build.sh bench_step >/dev/null
else
  cmake --build "$build" --target bench_step >/dev/null
fi
rounds=${ROUNDS:-2}
threads_list=${THREADS:-"1 2"}
norms=${NORMS:-"none layernorm rmsnorm prmsnorm batchnorm"}
steps=${STEPS:-5}
warmup=${WARMUP:-2}
out=$(mktemp)
for round in $(seq "$rounds"); do
  for t in $threads_list; do
    for norm in $norms; do
      "$build"/bin/bench_step --model reader --norm "$norm" --threads "$t" --steps "$steps" --warmup "$warmup" |
        tee -a "$out"
      OMP_NUM_THREADS=$t /usr/bin/python3 bench/attentive_reader_torch.py --norm "$norm" --threads "$t" \
        --steps "$steps" --warmup "$warmup" | tee -a "$out"
    done
  done
done
echo
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
params = {}
for line in open(sys.argv[1]):
    if line.strip():
        r = json.loads(line)
        runs[(r["impl"], r["norm"], r["threads"])].append(r["ms_per_step"])
        params[(r["impl"], r["norm"])] = r["parameters"]
ms = {k: statistics.median(v) for k, v in runs.items()}
print("| threads | norm | ours ms/step | PyTorch ms/step | ours ÷ PyTorch | ours ÷ our LayerNorm |")
print("|---|---|---|---|---|---|")
order = {"none": 0, "layernorm": 1, "rmsnorm": 2, "prmsnorm": 3, "batchnorm": 4}
for (impl, norm, t), v in sorted(ms.items(), key=lambda kv: (kv[0][2], order.get(kv[0][1], 9))):
    if impl != "rmsgrad":
        continue
    torch = ms.get(("torch", norm, t))
    ln = ms.get(("rmsgrad", "layernorm", t))
    cell = lambda x, f: "—" if x is None else format(x, f)
    print(f"| {t} | {norm} | {v:.0f} | {cell(torch, '.0f')} | {cell(torch and v / torch, '.2f')} "
          f"| {cell(ln and v / ln, '.3f')} |")
print()
print("| norm | our parameters | PyTorch parameters |")
print("|---|---|---|")
for norm in sorted({n for _, n in params}, key=lambda n: order.get(n, 9)):
    ours, theirs = params.get(("rmsgrad", norm)), params.get(("torch", norm))
    flag = "" if ours == theirs else "  ← differ"
    print(f"| {norm} | {ours} | {theirs}{flag} |")
PY
rm -f "$out"
