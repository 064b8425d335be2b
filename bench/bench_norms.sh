#!/usr/bin/env bash
# Times our fused norms and PyTorch's in the same run, at 1 and 2 threads, and
# prints the comparison table. Needs Debian's python3-torch (/usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh bench_norms >/dev/null
out=$(mktemp -d)
for t in 1 2; do
  build/bin/bench_norms --threads "$t" >>"$out/ours.jsonl"
  OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t /usr/bin/python3 bench/bench_norms_torch.py --threads "$t" >>"$out/torch.jsonl"
done
cat "$out/ours.jsonl" "$out/torch.jsonl"
echo
/usr/bin/python3 bench/compare_norms.py "$out/ours.jsonl" "$out/torch.jsonl"
rm -rf "$out"
