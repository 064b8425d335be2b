#!/usr/bin/env bash
# One training step of the order-embedding model (batch 128, word vectors
# 300, GRU 1024, image features 2048, captions of 6–17 words), ours against
# the same model in PyTorch (bench/order_embedding_torch.py), with each norm
# and both similarities, at 1 and 2 threads, in the same run. ROUNDS (default
# 2) interleaved rounds, median of the rounds' medians. The issue's targets:
# ours ≤ 0.9× PyTorch's step, and our RMSNorm step faster than our LayerNorm
# step.
#
#   bench/bench_order_embedding.sh            # THREADS="1 2" NORMS=... METHODS=... ROUNDS=2
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh bench_step >/dev/null
rounds=${ROUNDS:-2}
threads_list=${THREADS:-"1 2"}
norms=${NORMS:-"none layernorm rmsnorm prmsnorm"}
methods=${METHODS:-"order cosine"}
out=$(mktemp)
for round in $(seq "$rounds"); do
  for t in $threads_list; do
    for method in $methods; do
      for norm in $norms; do
        build/bin/bench_step --model order_embedding --norm "$norm" --set method="$method" --threads "$t" --steps 5 --warmup 2 |
          tee -a "$out"
        OMP_NUM_THREADS=$t /usr/bin/python3 bench/order_embedding_torch.py --norm "$norm" --method "$method" \
          --threads "$t" --steps 5 --warmup 2 | tee -a "$out"
      done
    done
  done
done
echo
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for line in open(sys.argv[1]):
    if line.strip():
        r = json.loads(line)
        runs[(r["impl"], r["norm"], r["method"], r["threads"])].append(r["ms_per_step"])
ms = {k: statistics.median(v) for k, v in runs.items()}
print("| threads | similarity | norm | ours ms/step | PyTorch ms/step | ours ÷ PyTorch | ours ÷ our LayerNorm |")
print("|---|---|---|---|---|---|---|")
order = {"none": 0, "layernorm": 1, "rmsnorm": 2, "prmsnorm": 3}
for (impl, norm, method, t), v in sorted(ms.items(), key=lambda kv: (kv[0][3], kv[0][2], order.get(kv[0][1], 9))):
    if impl != "rmsgrad":
        continue
    torch = ms.get(("torch", norm, method, t))
    ln = ms.get(("rmsgrad", "layernorm", method, t))
    print(f"| {t} | {method} | {norm} | {v:.0f} | {torch:.0f} | {v / torch:.2f} | {v / ln:.3f} |")
PY
rm -f "$out"
