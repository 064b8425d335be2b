"""The floor table of bench/bench_floor.sh, from bench_floor's JSON lines: per model and thread
count the step, its three floors (its products alone on OpenBLAS, its products alone on the best
library — the floor — and their FLOPs at the f32 FMA peak), the step over the last two and the GEMM
FLOPs; then the 2-thread
speedup of the step against that of its floor; then where the time beyond the products goes, by
kind, in ms per step (from the profiled steps, whose products' own time is `gemm in step`).

Several lines for the same model and threads (rounds) give the median of each figure.

    /usr/bin/python3 bench/floor_table.py LINES.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict

KINDS = ["normalization", "elementwise", "softmax_loss", "recurrence", "data_movement", "convolution_pooling",
         "optimizer", "allocation", "other"]


def main():
    runs = defaultdict(list)
    for line in open(sys.argv[1]):
        line = line.strip()
        if line.startswith("{"):
            j = json.loads(line)
            runs[(j["model"], j.get("precision", "f32"), j["threads"])].append(j)

    def median(model, threads, key, precision="f32"):
        values = [r[key] for r in runs.get((model, precision, threads), []) if key in r]
        return statistics.median(values) if values else None

    def median_kind(model, threads, kind, precision="f32"):
        values = [r["breakdown_ms"].get(kind, 0.0) for r in runs.get((model, precision, threads), [])]
        return statistics.median(values) if values else None

    models = list(dict.fromkeys(m for m, _, _ in runs))
    precisions = sorted({p for _, p, _ in runs}, key=lambda p: p != "f32")
    print("| model | precision | threads | step ms | OpenBLAS floor ms | best-library floor ms | FLOP-peak floor ms | "
          "step ÷ best-library floor | step ÷ FLOP-peak floor | GFLOP | GFLOP/s alone (best) | peak GFLOP/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m in models:
        for p in precisions:
            for t in sorted({t for mm, pp, t in runs if mm == m and pp == p}):
                step, floor = median(m, t, "step_ms", p), median(m, t, "floor_ms", p)
                openblas = median(m, t, "floor_openblas_ms", p) or float("nan")
                peak = median(m, t, "peak_floor_ms", p) or float("nan")
                print(f"| {m} | {p} | {t} | {step:.0f} | {openblas:.0f} | {floor:.0f} | {peak:.0f} | {step / floor:.2f} | "
                      f"{step / peak:.2f} | {median(m, t, 'gemm_gflop', p):.1f} | {median(m, t, 'floor_gflops', p):.0f} | "
                      f"{median(m, t, 'peak_gflops', p) or float('nan'):.0f} |")
    print()
    if any((m, "f32", 1) in runs and (m, "f32", 2) in runs for m in models):
        print("| model | step: 1 → 2 threads | floor: 1 → 2 threads | step's speedup ÷ floor's |")
        print("|---|---|---|---|")
        for m in models:
            if (m, "f32", 1) in runs and (m, "f32", 2) in runs:
                s = median(m, 1, "step_ms") / median(m, 2, "step_ms")
                f = median(m, 1, "floor_ms") / median(m, 2, "floor_ms")
                print(f"| {m} | {s:.2f}× | {f:.2f}× | {s / f:.2f} |")
        print()
    print("Where a profiled f32 step's time goes, ms per step (gemm in step: its products inside the step):")
    print()
    print("| model | threads | profiled | gemm in step | " + " | ".join(k.replace("_", " ") for k in KINDS) + " |")
    print("|---|---|---|---|" + "---|" * len(KINDS))
    for m in models:
        for t in sorted({t for mm, p, t in runs if mm == m and p == "f32"}):
            cells = " | ".join(f"{median_kind(m, t, k):.0f}" for k in KINDS)
            print(f"| {m} | {t} | {median(m, t, 'profiled_ms'):.0f} | {median(m, t, 'gemm_in_step_ms'):.0f} | {cells} |")


if __name__ == "__main__":
    main()
