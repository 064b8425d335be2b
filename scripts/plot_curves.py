#!/usr/bin/python3
"""Learning curves from the metrics.jsonl of several runs, one line per run.

    scripts/plot_curves.py runs/cifar-rms runs/cifar-layer --metric error_pct --split test -o error.png
    scripts/plot_curves.py runs/rnnsearch/ --metric bleu --split valid --x time -o bleu.svg
    scripts/plot_curves.py runs/cifar-* --metric loss,error_pct --split train,test -o cifar.png

A directory without metrics.jsonl stands for its subdirectories that have one
(sibling runs, e.g. one per normalization). --metric and --split take
comma-separated lists to draw panels side by side, like the paper's figures
(training loss next to test error); a single value is used for every panel.
The x axis is the step, the training time (--x time: the runs' time_sec, which
excludes evaluation) or the epoch (--x epoch: an "epoch" field the driver logs).
Each run is labelled by its config.json's "norm", else by its directory name
(--label dir, or --label KEY for any config key). --points "LABEL=x:y,x:y"
adds a curve of figures measured elsewhere (a table in the README, say), drawn
with markers; its x is in steps, epochs or seconds, as the runs' are. Runs that share a label and
differ only in their config's "seed" (a paper script's SEEDS="1 2 3") are drawn
as one mean curve with a band of ± one standard deviation across the seeds.
With --paired FILE (paired_timing.sh's JSON lines) --x time is the steps × the
fused step's paired time of the run's norm: runs made on different machines,
or side by side, then share one clock.
The format follows the output's extension (.png, .svg, .pdf). Needs Debian's
python3-matplotlib.
"""
import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

X_FIELDS = {"step": "step", "time": "time_sec", "epoch": "epoch"}


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def find_runs(paths):
    """Run directories: each path itself, or its subdirectories holding a metrics.jsonl."""
    runs = []
    for path in map(Path, paths):
        if (path / "metrics.jsonl").is_file():
            runs.append(path)
        elif path.is_dir():
            children = sorted(p for p in path.iterdir() if (p / "metrics.jsonl").is_file())
            if not children:
                fail(f"{path} has no metrics.jsonl, nor any subdirectory with one")
            runs.extend(children)
        else:
            fail(f"{path} is not a run directory")
    return runs


def read_metrics(run):
    """The run's lines as dicts; a torn last line (a crash mid-write) is skipped."""
    lines = []
    with open(run / "metrics.jsonl", encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            text = text.strip()
            if not text:
                continue
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError:
                print(f"warning: {run}/metrics.jsonl line {number} is not JSON; skipped", file=sys.stderr)
    return lines


def read_config(run):
    try:
        with open(run / "config.json", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return {}


def base_labels(runs, label_key):
    labels = []
    for run in runs:
        config = read_config(run)
        if label_key == "dir":
            labels.append(run.name)
        elif label_key == "auto":
            labels.append(str(config["norm"]) if "norm" in config else run.name)
        else:
            labels.append(f"{label_key}={config[label_key]}" if label_key in config else run.name)
    return labels


def seed_groups(runs, labels):
    """{label: [runs]} for labels whose runs differ only in seed (each with a distinct config seed)."""
    groups = {}
    for run, label in zip(runs, labels):
        groups.setdefault(label, []).append(run)
    seeded = {}
    for label, members in groups.items():
        seeds = [read_config(run).get("seed") for run in members]
        if len(members) > 1 and None not in seeds and len(set(seeds)) == len(seeds):
            seeded[label] = members
    return seeded


def run_labels(labels, runs):
    # Two runs with the same setting: tell them apart by directory.
    return [f"{label} ({run.name})" if labels.count(label) > 1 and label != run.name else label
            for label, run in zip(labels, runs)]


def mean_band(curves):
    """Mean x, mean y and the y's standard deviation, point by point over the
    curves' common length (the runs of one norm log at the same steps)."""
    n = min(len(xs) for xs, _ in curves)
    mx, my, sd = [], [], []
    for i in range(n):
        xs = [c[0][i] for c in curves]
        ys = [c[1][i] for c in curves]
        m = sum(ys) / len(ys)
        mx.append(sum(xs) / len(xs))
        my.append(m)
        sd.append((sum((y - m) ** 2 for y in ys) / (len(ys) - 1)) ** 0.5)
    return mx, my, sd


def curve(lines, split, metric, x_field, smooth):
    """(xs, ys) for one run, sorted by step; a step logged twice keeps its last line."""
    by_step = {}
    for line in lines:
        if line.get("split") != split or not isinstance(line.get(metric), (int, float)):
            continue
        if not isinstance(line.get(x_field), (int, float)):
            continue
        by_step[line["step"]] = (line[x_field], line[metric])
    points = [by_step[step] for step in sorted(by_step)]
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    if smooth > 1:  # trailing moving average
        ys = [sum(ys[max(0, i - smooth + 1):i + 1]) / (i + 1 - max(0, i - smooth + 1)) for i in range(len(ys))]
    return xs, ys


def read_paired(path):
    """{norm: seconds per step} of the fused implementation from paired_timing.sh's JSON lines."""
    seconds, models = {}, {}
    try:
        with open(path, encoding="utf-8") as f:
            for number, text in enumerate(f, 1):
                if not text.startswith("{"):
                    continue  # the header lines paired_timing.sh's benchmark prints
                try:
                    row = json.loads(text)
                    if "model" in row:
                        models.setdefault(str(row["model"]), number)
                    if row.get("impl") == "fused":
                        seconds[str(row["norm"])] = float(row["ms_per_step"]) / 1000.0
                except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
                    fail(f"--paired {path} line {number} is not a paired-timing line")
    except OSError as e:
        fail(f"--paired {path}: {e.strerror}")
    if len(models) > 1:
        (a, line_a), (b, line_b) = list(models.items())[:2]
        fail(f"--paired {path} times two models ({a} on line {line_a}, {b} on line {line_b}); give one model's lines")
    if not seconds:
        fail(f"--paired {path} has no fused timing")
    return seconds


def parse_points(text):
    """"LABEL=x:y,x:y,..." → (label, xs, ys)."""
    label, sep, pairs = text.partition("=")
    try:
        if not sep or not label:
            raise ValueError
        points = [tuple(float(v) for v in pair.split(":")) for pair in pairs.split(",")]
        if any(len(p) != 2 for p in points):
            raise ValueError
    except ValueError:
        fail(f'--points {text!r}: expected "LABEL=x:y,x:y,..." with numbers')
    return label, [x for x, _ in points], [y for _, y in points]


def time_scale(max_seconds):
    if max_seconds >= 2 * 3600:
        return 3600.0, "training time (hours)"
    if max_seconds >= 2 * 60:
        return 60.0, "training time (minutes)"
    return 1.0, "training time (seconds)"


def panel_limits(text, flag, panels):
    """One axis limit per panel from "8" (every panel) or "8,,2" (empty: automatic)."""
    fields = text.split(",")
    if len(fields) == 1:
        fields *= panels
    if len(fields) != panels:
        fail(f"{flag} {text}: {len(fields)} values for {panels} panels")
    try:
        return [float(f) if f.strip() else None for f in fields]
    except ValueError:
        fail(f"{flag} {text}: not a number or an empty field")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run directories, or directories of runs")
    parser.add_argument("--metric", default="loss", help="metric(s), comma-separated: loss, error_pct, bleu, r1, ...")
    parser.add_argument("--split", default="valid", help="split(s), comma-separated: train, valid, test")
    parser.add_argument("--x", choices=sorted(X_FIELDS), default="step", help="x axis (default: step)")
    parser.add_argument("--label", default="auto", help="auto (config's norm, else directory), dir, or a config key")
    parser.add_argument("--smooth", type=int, default=1, help="moving average over this many points")
    parser.add_argument("--logy", action="store_true", help="logarithmic y axis")
    parser.add_argument("--ymin", default="", help="lower y limit; comma-separated per panel, empty for automatic")
    parser.add_argument("--ymax", default="", help="upper y limit; comma-separated per panel (--ymax 8, caps the first)")
    parser.add_argument("--points", action="append", default=[], metavar="LABEL=x:y,x:y",
                        help="a curve of figures measured elsewhere, drawn with markers (x in the runs' unit)")
    parser.add_argument("--paired", default="", metavar="FILE",
                        help="with --x time: steps × the fused step's paired time of each run's norm")
    parser.add_argument("--title", default="", help="figure title")
    parser.add_argument("-o", "--out", default="curves.png", help="output file: .png, .svg or .pdf")
    args = parser.parse_args()

    metrics = args.metric.split(",")
    splits = args.split.split(",")
    if len(metrics) > 1 and len(splits) > 1 and len(metrics) != len(splits):
        fail(f"{len(metrics)} metrics and {len(splits)} splits: give one split, one metric, or as many of each")
    panels = list(zip(metrics * (len(splits) if len(metrics) == 1 else 1),
                      splits * (len(metrics) if len(splits) == 1 else 1)))
    ymins, ymaxs = (panel_limits(text, flag, len(panels)) for text, flag in ((args.ymin, "--ymin"), (args.ymax, "--ymax")))
    if Path(args.out).suffix.lower() not in (".png", ".svg", ".pdf"):
        fail(f"--out {args.out}: the extension must be .png, .svg or .pdf")

    extra = [parse_points(text) for text in args.points]
    runs = find_runs(args.runs)
    bases = base_labels(runs, args.label)
    seeded = seed_groups(runs, bases)
    labels = run_labels(bases, runs)
    metrics_of = {run: read_metrics(run) for run in runs}
    x_field = X_FIELDS[args.x]
    step_seconds = {}  # run → seconds per step, with --paired
    if args.paired:
        if args.x != "time":
            fail("--paired sets the time axis: give it with --x time")
        paired = read_paired(args.paired)
        for run in runs:
            norm = str(read_config(run).get("norm", ""))
            if norm not in paired:
                fail(f"--paired {args.paired} has no fused timing for {run}'s norm '{norm}'")
            step_seconds[run] = paired[norm]
        x_field = "step"

    figure, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False)
    drawn = 0
    for ax, (metric, split), ymin, ymax in zip(axes[0], panels, ymins, ymaxs):
        curves, bands = [], {}
        for run, base, label in zip(runs, bases, labels):
            xs, ys = curve(metrics_of[run], split, metric, x_field, args.smooth)
            if run in step_seconds:
                xs = [x * step_seconds[run] for x in xs]
            if base in seeded and xs:
                bands.setdefault(base, []).append((xs, ys))
                continue
            if not xs:
                print(f"warning: {run} has no '{metric}' on {split} lines with '{x_field}'; not drawn",
                      file=sys.stderr)
                continue
            curves.append((xs, ys, label))
        for base, members in bands.items():
            mx, my, sd = mean_band(members)
            curves.append((mx, my, f"{base} (mean ± sd of {len(members)} seeds)", sd))
        curves = [c if len(c) == 4 else (*c, None) for c in curves]
        curves += [(xs, ys, f"{label} (measured points)", "points") for label, xs, ys in extra]
        x_unit, x_label = (1.0, args.x)
        if args.x == "time" and curves:
            x_unit, x_label = time_scale(max(max(c[0]) for c in curves))
            if args.paired:
                x_label += ", steps × paired step time"
        for xs, ys, label, sd in curves:
            scaled = [x / x_unit for x in xs]
            if sd == "points":
                ax.plot(scaled, ys, "o--", label=label, linewidth=1.0, markersize=4)
                drawn += 1
                continue
            line, = ax.plot(scaled, ys, label=label, linewidth=1.4)
            if sd is not None:
                ax.fill_between(scaled, [y - s for y, s in zip(ys, sd)], [y + s for y, s in zip(ys, sd)],
                                color=line.get_color(), alpha=0.2, linewidth=0)
            drawn += 1
        ax.set_xlabel(x_label)
        ax.set_ylabel(f"{split} {metric}")
        ax.grid(True, alpha=0.3)
        if args.logy:
            ax.set_yscale("log")
        if ymin is not None or ymax is not None:
            ax.set_ylim(bottom=ymin, top=ymax)
        if curves:
            ax.legend(frameon=False)
    if drawn == 0:
        fail(f"nothing to draw: no run has {', '.join(f'{s} {m}' for m, s in panels)} against {x_field}")
    if args.title:
        figure.suptitle(args.title)
    figure.tight_layout()
    figure.savefig(args.out, dpi=150)
    print(f"wrote {args.out}: {drawn} curve{'s' if drawn != 1 else ''} from {len(runs)} run{'s' if len(runs) != 1 else ''}")


if __name__ == "__main__":
    main()
