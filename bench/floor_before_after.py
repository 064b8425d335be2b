"""The table of bench/floor_before_after.sh, from bench_floor's JSON lines tagged "build": before or
after: per model, norm and thread count, the median step of each build over the rounds, after ÷
before, each step over its own floor (the products alone, best library), and the milliseconds the
profiled step spent in the norms and in the recurrent cells' own ops, before → after. Lines with
bf16 products (--precision bf16) get their own rows, and with both precisions a second table gives
each build's bf16 step ÷ its f32 step.

    /usr/bin/python3 bench/floor_before_after.py LINES.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict


def main():
    runs = defaultdict(list)
    for line in open(sys.argv[1]):
        line = line.strip()
        if line.startswith("{"):
            j = json.loads(line)
            runs[(j["model"], j["norm"], j["threads"], j.get("precision", "f32"), j["build"])].append(j)

    def median(key, build, pick):
        return statistics.median(pick(r) for r in runs[key + (build,)])

    print("| model | norm | threads | precision | step ms before | step ms after | after ÷ before | step ÷ floor before → after "
          "| norms ms before → after | cells ms before → after | norms' share before → after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    keys = list(dict.fromkeys(k[:4] for k in runs))
    for key in keys:
        if not runs[key + ("before",)] or not runs[key + ("after",)]:
            continue
        step = {b: median(key, b, lambda r: r["step_ms"]) for b in ("before", "after")}
        ratio = {b: median(key, b, lambda r: r["step_over_floor"]) for b in ("before", "after")}
        norms = {b: median(key, b, lambda r: r["breakdown_ms"].get("normalization", 0.0)) for b in ("before", "after")}
        cells = {b: median(key, b, lambda r: r["breakdown_ms"].get("recurrence", 0.0)) for b in ("before", "after")}
        profiled = {b: median(key, b, lambda r: r["profiled_ms"]) for b in ("before", "after")}
        share = {b: 100.0 * norms[b] / profiled[b] for b in ("before", "after")}
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {step['before']:.0f} | {step['after']:.0f} | "
              f"{step['after'] / step['before']:.3f} | {ratio['before']:.2f} → {ratio['after']:.2f} | "
              f"{norms['before']:.1f} → {norms['after']:.1f} | {cells['before']:.1f} → {cells['after']:.1f} | "
              f"{share['before']:.1f}% → {share['after']:.1f}% |")

    pairs = [k for k in dict.fromkeys(k[:3] for k in keys) if all(runs[k + (p, b)] for p in ("f32", "bf16")
                                                                  for b in ("before", "after"))]
    if pairs:
        print()
        print("| model | norm | threads | bf16 ÷ f32 step before | bf16 ÷ f32 step after |")
        print("|---|---|---|---|---|")
        for key in pairs:
            ratio = {b: median(key + ("bf16",), b, lambda r: r["step_ms"]) / median(key + ("f32",), b, lambda r: r["step_ms"])
                     for b in ("before", "after")}
            print(f"| {key[0]} | {key[1]} | {key[2]} | {ratio['before']:.3f} | {ratio['after']:.3f} |")


if __name__ == "__main__":
    main()
