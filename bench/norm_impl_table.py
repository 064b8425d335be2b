#!/usr/bin/env python3
"""Tables of bench_norm_impl's JSON lines: per model and thread count, each
norm's step fused and composed, its speedup against LayerNorm of the same
implementation (1 − ratio, with the 95% interval of the ratio turned into one
of the speedup), what fusing buys (composed ÷ fused), and the paper's speedup
of the same model (PAPER.md's Tables 2, 3, 6, 8, 10).

    python3 bench/norm_impl_table.py LINES.jsonl [--model M] [--markdown-only]
"""
import argparse
import json
from collections import OrderedDict

# The paper's speedups against LayerNorm, (T_LN − T) / T_LN, in %.
PAPER = {
    "rnnsearch": {"rmsnorm": "24.7 / 34.0 / 11.0", "prmsnorm": "25.9 / 33.4 / 12.0", "none": "40.0 / 39.7 / 50.2",
                  "where": "Tables 2–3 (TF / Theano / PyTorch)"},
    "reader": {"rmsnorm": "15.1", "prmsnorm": "15.8", "none": "19.6", "where": "Table 6"},
    "order_embedding": {"rmsnorm": "40.8", "prmsnorm": "63.9", "none": "82.4", "where": "Table 8"},
    "convpool": {"rmsnorm": "20.5", "prmsnorm": "23.1", "none": "46.2", "where": "Table 10"},
}
# The order tables list norms in (bench/model_step_table.py's too).
ORDER = {"none": 0, "layernorm": 1, "rmsnorm": 2, "prmsnorm": 3, "l2norm": 4, "batchnorm": 5}


def speedup(ratio):
    return "—" if ratio is None else f"{100 * (1 - ratio):.1f}%"


def interval(lo, hi):
    # The speedup 1 − r falls as r rises: the interval's ends swap.
    return "—" if lo is None or hi is None else f"{100 * (1 - hi):.1f} to {100 * (1 - lo):.1f}"


def table(rows, model):
    paper = PAPER.get(model, {})
    groups = OrderedDict()
    for r in rows:
        groups.setdefault(r["threads"], []).append(r)
    lines = [f"| threads | norm | fused ms | fused speedup (95% CI) | composed ms | composed speedup (95% CI) "
             f"| composed ÷ fused | paper's speedup ({paper.get('where', '—')}) |",
             "|---|---|---|---|---|---|---|---|"]
    for threads, rs in groups.items():
        by = {(r["impl"], r["norm"]): r for r in rs}
        for norm in sorted({r["norm"] for r in rs}, key=lambda n: ORDER.get(n, 9)):
            f, c = by.get(("fused", norm)), by.get(("composed", norm))
            cells = [str(threads), norm]
            for x in (f, c):
                if x is None:
                    cells += ["—", "—"]
                elif norm == "layernorm":
                    cells += [f"{x['ms_per_step']:.1f}", "(reference)"]
                else:
                    cells += [f"{x['ms_per_step']:.1f}",
                              f"{speedup(x['ratio_vs_layernorm'])} ({interval(x['ci95_low'], x['ci95_high'])})"]
            cf = c.get("composed_vs_fused") if c else None
            cf_text = "—" if cf is None or norm == "none" else \
                f"{cf:.3f} ({c['cf_ci95_low']:.3f}–{c['cf_ci95_high']:.3f})" if c.get("cf_ci95_low") is not None \
                else f"{cf:.3f}"
            cells += [cf_text, paper.get(norm, "—" if norm != "layernorm" else "(reference)")]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lines")
    parser.add_argument("--model", help="only this model")
    args = parser.parse_args()
    rows = [json.loads(line) for line in open(args.lines) if line.strip().startswith("{")]
    models = OrderedDict((r["model"], None) for r in rows)
    for model in models:
        if args.model and model != args.model:
            continue
        print(f"{model}:\n")
        print(table([r for r in rows if r["model"] == model], model))
        print()


if __name__ == "__main__":
    main()
