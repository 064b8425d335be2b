#!/usr/bin/env bash
# Times our fused norms and PyTorch's in the same run, at 1 and 2 threads, and
# prints the comparison table. Needs PyTorch: Debian's python3-torch
# (/usr/bin/python3), else a python3 on PATH that has torch.
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_bench bench_norms
# Ours and PyTorch's lines go to two files, which compare_norms.py joins.
for t in 1 2; do
  ours bench_norms --threads "$t" >>"$scratch/ours.jsonl"
  OPENBLAS_NUM_THREADS=$t twin "$t" bench_norms_torch.py >>"$scratch/torch.jsonl"
done
cat "$scratch/ours.jsonl" "$scratch/torch.jsonl"
echo
/usr/bin/python3 bench/compare_norms.py "$scratch/ours.jsonl" "$scratch/torch.jsonl"
