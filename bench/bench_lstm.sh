#!/usr/bin/env bash
# One LSTM cell step (batch 64; input 240 with hidden 240 and 1024), ours
# plain and with each norm against torch.nn.LSTMCell, at 1 and 2 threads in
# the same run, and the comparison table; then the fused pointwise ops alone.
# BUILD_DIR (default build) picks the build tree, configured by
# scripts/build.sh when it is the default.
set -euo pipefail
source "$(dirname "$0")/common.sh"
op_sweep bench_lstm bench_lstm_torch.py
show_table <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
torch = {(r["threads"], r["hidden"]): r for r in rows if r["norm"] == "torch.nn.LSTMCell"}
print("| threads | B×E×H | ours | fwd ms | fwd+bwd ms | torch LSTMCell fwd+bwd ms | ours ÷ torch |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    if r["op"] == "lstm_cell" and r["norm"] != "torch.nn.LSTMCell":
        t = torch[(r["threads"], r["hidden"])]["fwd_bwd_ms"]
        size = f"{r['batch']}×{r['input']}×{r['hidden']}"
        print(f"| {r['threads']} | {size} | {r['norm']} | {r['fwd_ms']:.3f} | {r['fwd_bwd_ms']:.3f} | {t:.3f} "
              f"| {r['fwd_bwd_ms'] / t:.2f} |")
print()
print("| threads | B×H | fused pointwise ops (masked) | fwd ms | fwd+bwd ms |")
print("|---|---|---|---|---|")
for r in rows:
    if r["op"] == "lstm_pointwise":
        print(f"| {r['threads']} | {r['batch']}×{r['hidden']} | lstm_cell_state + lstm_hidden "
              f"| {r['fwd_ms']:.4f} | {r['fwd_bwd_ms']:.4f} |")
PY
