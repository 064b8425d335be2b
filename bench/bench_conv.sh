#!/usr/bin/env bash
# Times our conv2d and PyTorch's on the ConvPool-CNN-C layer shapes at batch
# 100, at 1 and 2 threads, in the same run, and prints the comparison table.
# Needs PyTorch: Debian's python3-torch (/usr/bin/python3), else a python3 on
# PATH that has torch.
set -euo pipefail
source "$(dirname "$0")/common.sh"
op_sweep bench_conv bench_conv_torch.py
show_table <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
key = lambda r: (r["threads"], r["layer"])
ours = {key(r): r for r in rows if r["impl"] == "rmsgrad"}
torch = {key(r): r for r in rows if r["impl"] == "torch"}
print("| threads | layer (batch 100) | ours fwd ms | ours fwd+bwd ms | torch fwd ms | torch fwd+bwd ms | ours ÷ torch (f+b) |")
print("|---|---|---|---|---|---|---|")
for k in sorted(ours):
    o, t = ours[k], torch[k]
    print(f"| {k[0]} | {k[1]} | {o['fwd_ms']:.1f} | {o['fwd_bwd_ms']:.1f} | {t['fwd_ms']:.1f} | {t['fwd_bwd_ms']:.1f} "
          f"| {o['fwd_bwd_ms'] / t['fwd_bwd_ms']:.2f} |")
PY
