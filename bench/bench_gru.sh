#!/usr/bin/env bash
# One GRU cell step (batch 80, input 512, hidden 1024), ours plain and with
# each norm against torch.nn.GRUCell, at 1 and 2 threads in the same run, and
# the comparison table. The issue's target: ours ≤ 0.9× GRUCell.
set -euo pipefail
source "$(dirname "$0")/common.sh"
op_sweep bench_gru bench_gru_torch.py
show_table <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
torch = {r["threads"]: r for r in rows if r["norm"] == "torch.nn.GRUCell"}
print("| threads | ours | fwd ms | fwd+bwd ms | torch GRUCell fwd+bwd ms | ours ÷ torch |")
print("|---|---|---|---|---|---|")
for r in rows:
    if r["norm"] != "torch.nn.GRUCell":
        t = torch[r["threads"]]["fwd_bwd_ms"]
        print(f"| {r['threads']} | {r['norm']} | {r['fwd_ms']:.2f} | {r['fwd_bwd_ms']:.2f} | {t:.2f} | {r['fwd_bwd_ms'] / t:.2f} |")
PY
