#!/usr/bin/python3
"""Bar chart of bench_norm_impl's lines: for each model (and thread count),
the speedup of RMSNorm, pRMSNorm and no norm against LayerNorm, fused and
composed from ops, with the 95% intervals as error bars, and the paper's
speedup for the same model as a marker.

    /usr/bin/python3 bench/plot_norm_impl.py LINES.jsonl [LINES2.jsonl ...] --threads 1 -o docs/norm_impl_speedups.png
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The paper's speedups against LayerNorm in % (PAPER.md; RNNSearch: the mean
# of its TF, Theano and PyTorch figures).
PAPER = {
    "rnnsearch": {"rmsnorm": (24.7 + 34.0 + 11.0) / 3, "prmsnorm": (25.9 + 33.4 + 12.0) / 3},
    "reader": {"rmsnorm": 15.1, "prmsnorm": 15.8},
    "order_embedding": {"rmsnorm": 40.8, "prmsnorm": 63.9},
    "convpool": {"rmsnorm": 20.5, "prmsnorm": 23.1},
}
NORMS = ["rmsnorm", "prmsnorm"]
STYLE = {"fused": dict(color="#4c72b0"), "composed": dict(color="#dd8452")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lines", nargs="+")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    rows = [json.loads(line) for path in args.lines for line in open(path) if line.startswith("{")]
    rows = [r for r in rows if r["threads"] == args.threads]
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, len(models), figsize=(3.2 * len(models), 3.6), sharey=True, squeeze=False)
    for ax, model in zip(axes[0], models):
        by = {(r["impl"], r["norm"]): r for r in rows if r["model"] == model}
        for i, norm in enumerate(NORMS):
            for j, impl in enumerate(["fused", "composed"]):
                r = by.get((impl, norm))
                if r is None:
                    continue
                x = i + (j - 0.5) * 0.36
                s = 100 * (1 - r["ratio_vs_layernorm"])
                lo = s - 100 * (1 - r["ci95_high"]) if r["ci95_high"] is not None else 0
                hi = 100 * (1 - r["ci95_low"]) - s if r["ci95_low"] is not None else 0
                ax.bar(x, s, 0.34, yerr=[[lo], [hi]], capsize=3, label=impl if i == 0 else None, **STYLE[impl])
            paper = PAPER.get(model, {}).get(norm)
            if paper is not None:
                ax.plot([i - 0.4, i + 0.4], [paper, paper], color="black", lw=1.5,
                        label="paper" if i == 0 else None)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xticks(range(len(NORMS)), ["RMSNorm", "pRMSNorm"])
        ax.set_title(model.replace("_", "-"))
        if ax is axes[0][0]:
            ax.set_ylabel("step time saved against LayerNorm (%)")
            ax.legend(fontsize=8)
    fig.suptitle(f"Fused kernels against norms composed from ops, {args.threads} thread(s), paired timing, 95% intervals",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
