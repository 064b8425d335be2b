#!/usr/bin/env python3
"""The paper's Table 5 over seeds: the decoder's hidden-to-hidden summed inputs.

Reads the summed_inputs.json that build/bin/summed_inputs writes into each run
folder (`<norm>-seed<S>/summed_inputs.json` under the folders given) and prints
one Markdown table: for each norm, the mean M and standard deviation S of the
summed inputs at target positions 1–4 and over all positions, before the norm
("raw") and after it, each cell the mean ± sd of the per-seed values.

  scripts/summed_inputs_table.py docs/seeds/rnnsearch_center02

Exits 2 naming the file when a record is missing a field or is not JSON.
"""
import json
import statistics
import sys
from pathlib import Path

POSITIONS = ("1", "2", "3", "4", "all")
ORDER = {"none": 0, "layernorm": 1, "rmsnorm": 2, "prmsnorm": 3}


def two_places(v):
    text = f"{v:.2f}"
    return "0.00" if text == "-0.00" else text


def cell(values):
    if len(values) == 1:
        return two_places(values[0])
    return f"{two_places(statistics.mean(values))} ± {two_places(statistics.stdev(values))}"


def rows_of(records):
    """(norm, statistic, cells) for each norm's M and S, raw and (with a norm) after it."""
    by_norm = {}
    for path, record in records:
        if not isinstance(record, dict) or not isinstance(record.get("norm"), str):
            raise SystemExit(f"summed_inputs_table: {path} names no norm")
        by_norm.setdefault(record["norm"], []).append((path, record))
    out = []
    for norm in sorted(by_norm, key=lambda n: (ORDER.get(n, 9), n)):
        runs = by_norm[norm]
        stages = [("raw", "")] if norm == "none" else [("raw", " before the norm"), ("normalized", " after it")]
        for stage, words in stages:
            for stat, name in (("mean", "M"), ("sd", "S")):
                cells = []
                for p in POSITIONS:
                    try:
                        cells.append(cell([r[stage][p][stat] for _, r in runs]))
                    except (KeyError, TypeError):
                        raise SystemExit(f"summed_inputs_table: {runs[0][0]} has no {stage} {p} {stat}")
                out.append((norm, f"{name}{words}", f"{len(runs)}", cells))
    return out


def main():
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print("usage: scripts/summed_inputs_table.py RUNS_FOLDER...", file=sys.stderr)
        return 2
    records = []
    for folder in sys.argv[1:]:
        paths = sorted(Path(folder).glob("*/summed_inputs.json"))
        if not paths:
            print(f"summed_inputs_table: no */summed_inputs.json under {folder}", file=sys.stderr)
            return 2
        for path in paths:
            try:
                records.append((path, json.loads(path.read_text())))
            except (OSError, json.JSONDecodeError) as e:
                print(f"summed_inputs_table: {path}: {e}", file=sys.stderr)
                return 2
    try:
        rows = rows_of(records)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    header = ["norm", "statistic", "seeds"] + [f"position {p}" if p != "all" else "all" for p in POSITIONS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for norm, stat, seeds, cells in rows:
        print("| " + " | ".join([norm, stat, seeds] + cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
