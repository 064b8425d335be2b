#!/usr/bin/python3
"""The pre-activation shift experiment's figure (scripts/shift_experiment.sh):
one panel per shift C, one mean curve per norm over its seeds with a band of
± one standard deviation, a validation metric against steps.

    scripts/plot_shift.py runs/shift-babi1 --metric error_pct -o runs/shift-babi1/shift_curves.png

OUT holds c<C>/<norm>-seed<s>/metrics.jsonl. The curves come from
plot_curves.py's readers, so the two scripts draw the same thing the same way.
Needs Debian's python3-matplotlib.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plot_curves  # noqa: E402  (beside this script)

from matplotlib import pyplot as plt  # noqa: E402  (plot_curves chose the Agg backend)

NORM_ORDER = ["none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "batchnorm", "weightnorm"]


def runs_by_shift(out):
    """The experiment's runs as [(C, [(norm, [run dirs over seeds])])], C ascending and the norms in
    NORM_ORDER; OUT holds c<C>/<norm>-seed<s>. Shared with shift_offsets.py."""
    shift_dirs = sorted((p for p in Path(out).glob("c*") if p.is_dir()), key=lambda p: float(p.name[1:]))
    if not shift_dirs:
        plot_curves.fail(f"{out} holds no c<C> folder of runs")
    grouped = []
    for shift_dir in shift_dirs:
        by_norm = {}
        for run in plot_curves.find_runs([shift_dir]):
            by_norm.setdefault(run.name.rsplit("-seed", 1)[0], []).append(run)
        norms = sorted(by_norm, key=lambda n: (NORM_ORDER.index(n) if n in NORM_ORDER else 99, n))
        grouped.append((float(shift_dir.name[1:]), [(norm, by_norm[norm]) for norm in norms]))
    return grouped


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the experiment's folder, holding c<C>/<norm>-seed<s>")
    parser.add_argument("--metric", default="error_pct")
    parser.add_argument("--split", default="valid")
    parser.add_argument("-o", "--output", required=True, help=".png, .svg or .pdf")
    args = parser.parse_args()

    grouped = runs_by_shift(args.out)
    fig, axes = plt.subplots(1, len(grouped), figsize=(4.2 * len(grouped), 3.6), sharey=True, squeeze=False)
    for ax, (shift, norms) in zip(axes[0], grouped):
        for norm, runs in norms:
            curves = [plot_curves.curve(plot_curves.read_metrics(run), args.split, args.metric, "step", 1)
                      for run in runs]
            curves = [c for c in curves if c[0]]
            if not curves:
                continue
            if len(curves) == 1:
                xs, ys = curves[0]
                ax.plot(xs, ys, label=norm, linewidth=1.4)
                continue
            xs, ys, sd = plot_curves.mean_band(curves)
            line, = ax.plot(xs, ys, label=f"{norm} ({len(curves)} seeds)", linewidth=1.4)
            ax.fill_between(xs, [y - s for y, s in zip(ys, sd)], [y + s for y, s in zip(ys, sd)],
                            color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_title(f"shift C = {shift:g}")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"{args.split} {args.metric}")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"figure: {args.output}")


if __name__ == "__main__":
    main()
