#!/usr/bin/python3
"""The paper's Figure 3 from scripts/prms_sweep.sh's runs: BLEU against
pRMSNorm's p, with each p's training step time relative to LayerNorm's
(paired timing) on a second axis; and the same numbers as a Markdown table.

    scripts/plot_prms_sweep.py OUT 0.0625 0.1 0.25 0.5 0.75 1.0 -o OUT/figure3.png

OUT/p<p>/metrics.jsonl gives validation BLEU (the last validation line) and
test BLEU (the test line, written for the checkpoint with the best validation
BLEU); OUT/p<p>/paired.jsonl, when present, the pRMSNorm line's ratio to
LayerNorm's step time with its 95% interval. Needs Debian's python3-matplotlib.
"""
import argparse
import json
import sys
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def read_lines(path):
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: {e}")


def bleu(metrics, split):
    lines = [m for m in metrics if m.get("split") == split and "bleu" in m]
    return lines[-1]["bleu"] if lines else None


def timing(path):
    if not path.exists():
        return None
    for line in read_lines(path):
        if line.get("norm") == "prmsnorm":
            return line["ratio_vs_layernorm"], line["ci95_low"], line["ci95_high"], line["ms_per_step"]
    fail(f"{path}: no prmsnorm line")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("p", nargs="+", help="the p values, as the run directories OUT/p<p> spell them")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()

    rows = []
    for p in args.p:
        run = Path(args.out) / f"p{p}"
        metrics_path = run / "metrics.jsonl"
        if not metrics_path.exists():
            fail(f"{metrics_path} is missing: was OUT/p{p} trained?")
        metrics = read_lines(metrics_path)
        rows.append((float(p), p, bleu(metrics, "valid"), bleu(metrics, "test"), timing(run / "paired.jsonl")))
    rows.sort()

    def cell(value, digits=2):
        return "–" if value is None else f"{value:.{digits}f}"

    print("Figure 3 as a table (pRMSNorm at each p; p = 1 is RMSNorm; step time relative to LayerNorm's,")
    print("paired in one process, with its 95% interval):")
    print()
    print("| p | valid BLEU | test BLEU | ms per step | step time ÷ LayerNorm (95% CI) |")
    print("|---|---|---|---|---|")
    for _, p, valid, test, t in rows:
        if t is None:
            time_cells = "– | –"
        else:  # the interval is null when too few pairs were timed
            interval = "" if t[1] is None or t[2] is None else f" ({t[1]:.3f}–{t[2]:.3f})"
            time_cells = f"{t[3]:.1f} | {t[0]:.3f}{interval}"
        print(f"| {p} | {cell(valid)} | {cell(test)} | {time_cells} |")

    fig, ax = plt.subplots(figsize=(6, 4))
    ps = [r[0] for r in rows]
    ax.plot(ps, [r[2] for r in rows], "o-", label="validation BLEU")
    if any(r[3] is not None for r in rows):
        ax.plot([r[0] for r in rows if r[3] is not None], [r[3] for r in rows if r[3] is not None], "s--",
                label="test BLEU")
    ax.set_xscale("log")
    ax.set_xticks(ps)
    ax.set_xticklabels([r[1] for r in rows])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # only the p values label the axis
    ax.set_xlabel("p (fraction of units in the RMS)")
    ax.set_ylabel("BLEU")
    timed = [r for r in rows if r[4] is not None]
    if timed:
        ax2 = ax.twinx()
        low = [r[4][0] - (r[4][1] if r[4][1] is not None else r[4][0]) for r in timed]
        high = [(r[4][2] if r[4][2] is not None else r[4][0]) - r[4][0] for r in timed]
        ax2.errorbar([r[0] for r in timed], [r[4][0] for r in timed], yerr=[low, high],
                     color="gray", fmt="^:", capsize=3, label="step time ÷ LayerNorm")
        ax2.set_ylabel("step time ÷ LayerNorm's (paired)")
        ax2.legend(loc="lower right")
    ax.legend(loc="lower left")
    ax.set_title("pRMSNorm's p on RNNSearch (the paper's Figure 3)")
    fig.tight_layout()
    fig.savefig(args.output)


if __name__ == "__main__":
    main()
