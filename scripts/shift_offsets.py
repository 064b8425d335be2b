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
"""
import argparse
import json
import re
import struct
import sys
from pathlib import Path

import numpy as np

NORM_ORDER = ["none", "layernorm", "rmsnorm", "prmsnorm", "l2norm", "batchnorm", "weightnorm"]


def read_offsets(checkpoint):
    """The float32 offset parameters of a checkpoint (safetensors layout), by name."""
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

    runs = {}  # (C, norm) -> list of per-seed concatenated offsets
    for checkpoint in sorted(Path(args.out).glob("c*/*-seed*/checkpoint.safetensors")):
        shift_match = re.fullmatch(r"c(.+)", checkpoint.parent.parent.name)
        norm_match = re.fullmatch(r"(.+)-seed\d+", checkpoint.parent.name)
        if not shift_match or not norm_match:
            continue
        offsets = read_offsets(checkpoint)
        if not offsets:
            continue  # C = 0: no offset exists
        key = (float(shift_match.group(1)), norm_match.group(1))
        runs.setdefault(key, []).append(np.concatenate(list(offsets.values())))
    if not runs:
        sys.exit(f"error: no checkpoint with offsets under {args.out}/c<C>/<norm>-seed<s>/")

    def order(key):
        shift, norm = key
        return (shift, NORM_ORDER.index(norm) if norm in NORM_ORDER else len(NORM_ORDER), norm)

    print("| C | norm | seeds | offsets at the end: mean | sd across units | largest move from C |")
    print("|---|---|---|---|---|---|")
    for shift, norm in sorted(runs, key=order):
        per_seed = runs[(shift, norm)]
        every = np.concatenate(per_seed)
        print(f"| {shift:g} | {norm} | {len(per_seed)} | {every.mean():.2f} | "
              f"{np.mean([o.std() for o in per_seed]):.2f} | {np.abs(every - shift).max():.2f} |")


if __name__ == "__main__":
    main()
