#!/usr/bin/python3
"""Where the pre-activation shift experiment's offsets ended up
(scripts/shift_experiment.sh): for each shift C and norm, the learnable
offsets (--preact-shift C starts every one at C) read from each seed's last
checkpoint, as one markdown table.

    scripts/shift_offsets.py runs/shift-babi1

Per row: the offsets' mean over every unit of every normalized place and every
seed, their standard deviation across units, and the largest distance any
offset moved from C. LayerNorm cannot see a shift that is the same for every
unit, so its offsets get no gradient along that direction; RMSNorm can, and
this shows whether training used it to bring its inputs back to centre.
The runs are found as scripts/plot_shift.py finds them (its runs_by_shift).
"""
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plot_shift  # noqa: E402  (beside this script)


def read_offsets(checkpoint):
    """The float32 offset parameters of a checkpoint (safetensors layout; experiments/README.md, "Reading a
    checkpoint from Python"), by name."""
    with open(checkpoint, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return {name: np.frombuffer(data[a:b], dtype="<f4")
            for name, t in header.items()
            if name.startswith("param.") and name.endswith(".offset")
            for a, b in [t["data_offsets"]]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the experiment's folder, holding c<C>/<norm>-seed<s>")
    args = parser.parse_args()

    print("| C | norm | seeds | offsets at the end: mean | sd across units | largest move from C |")
    print("|---|---|---|---|---|---|")
    rows = 0
    for shift, norms in plot_shift.runs_by_shift(args.out):
        for norm, runs in norms:
            per_seed = [np.concatenate(list(offsets.values()))
                        for run in runs if (run / "checkpoint.safetensors").is_file()
                        for offsets in [read_offsets(run / "checkpoint.safetensors")] if offsets]
            if not per_seed:
                continue  # C = 0 creates no offset
            every = np.concatenate(per_seed)
            print(f"| {shift:g} | {norm} | {len(per_seed)} | {every.mean():.2f} | "
                  f"{np.mean([o.std() for o in per_seed]):.2f} | {np.abs(every - shift).max():.2f} |")
            rows += 1
    if rows == 0:
        sys.exit(f"error: no checkpoint with offsets under {args.out}/c<C>/<norm>-seed<s>/")


if __name__ == "__main__":
    main()
