"""A model's recipe as our benchmarks train it, for the PyTorch and JAX twins: the JSON object that
`bench_step --model MODEL --recipe` prints (experiments/common/recipes.h, the one place it is written,
plus the benchmark batch's shape). Every setting becomes a flag of the twin with the recipe's value
as its default (batch=80 gives --batch 80, label_smoothing=0.1 gives --label-smoothing 0.1), so a
twin trains what our step trains unless told otherwise.

    import recipe
    recipe.add_flags(parser, "rnnsearch")        # before parser.parse_args()

The program comes from BUILD_DIR (default build), relative to the repository root; build it first
(scripts/build.sh bench_step, which every bench/*.sh wrapper does).
"""
import argparse
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(model, norm=None):
    """The recipe's settings, as a dict (without "model"); with the norm, where a setting depends on it
    (ConvPool-CNN-C's learning rate)."""
    program = os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"), "bin", "bench_step")
    if not os.path.exists(program):
        raise SystemExit(f"{program} is not built: scripts/build.sh bench_step (the twins read the recipe from it)")
    command = [program, "--model", model, "--recipe"] + (["--norm", norm] if norm else [])
    line = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    settings = json.loads(line)
    del settings["model"]
    return settings


def add_flags(parser, model, **renamed):
    """One flag per setting of the model's recipe, typed as its value (int, float or str); the
    settings the twin names otherwise are given as renamed (word_dim="emb"). A --norm on the command
    line is the recipe's norm."""
    norm_only = argparse.ArgumentParser(add_help=False)
    norm_only.add_argument("--norm")
    for key, value in read(model, norm_only.parse_known_args()[0].norm).items():
        name = renamed.get(key, key)
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=type(value), default=value,
                            help=f"the recipe's {key} (default {value})")
