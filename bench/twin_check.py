"""What every twin's --check reports: how far a computation of our model's loss and gradients (ours,
read from a bench_step --dump, or the twin's own float32 run as a yardstick) is from the twin's
float64 reference, and the reading of the dump. Needs numpy only; used by transformer_torch.py,
lm_torch.py, rnnsearch_jax.py and convpool_jax.py.
"""
import json
import math
import os
import sys

import numpy as np


def compare(loss, grads, ref_loss, ref_grads):
    """Relative loss and gradient-norm differences, and the worst per-parameter gradient difference
    max |g - ref| / max |ref| (against 1e-3 of the largest gradient anywhere when that is larger, so
    that a parameter whose gradient is all but zero is not judged by its rounding)."""
    rel = lambda a, b: abs(a - b) / max(abs(b), 1e-30)
    norm = lambda g: math.sqrt(sum(float((v ** 2).sum()) for v in g.values()))
    largest = max(float(np.abs(g).max()) for g in ref_grads.values())
    worst, worst_name = 0.0, ""
    for name, ref in ref_grads.items():
        diff = float(np.abs(grads[name] - ref).max()) / max(float(np.abs(ref).max()), 1e-3 * largest)
        if diff > worst:
            worst, worst_name = diff, name
    return {"loss_rel_diff": float(f"{rel(loss, ref_loss):.3g}"),
            "grad_norm_rel_diff": float(f"{rel(norm(grads), norm(ref_grads)):.3g}"),
            "worst_grad_rel_diff": float(f"{worst:.3g}"), "worst_grad": worst_name}


# How close ours must be to the float64 reference: the loss and the gradient norm relatively, each
# parameter's gradient as compare() measures it.
GRAD_TOL, LOSS_TOL = 1e-4, 1e-5


def verdict(ours, ours_grads, reference, yardstick):
    """compare() of ours (result.json's loss, our gradients) and of the twin's float32 run (`yardstick`,
    a (loss, gradients) pair) with the float64 `reference`; and whether ours is within the tolerances."""
    ref_loss, ref_grads = reference
    mine = compare(ours["loss"], ours_grads, ref_loss, ref_grads)
    f32 = compare(yardstick[0], yardstick[1], ref_loss, ref_grads)
    passed = (mine["loss_rel_diff"] <= LOSS_TOL and mine["grad_norm_rel_diff"] <= LOSS_TOL
              and mine["worst_grad_rel_diff"] <= GRAD_TOL)
    return mine, f32, passed


def read_json(directory, name):
    with open(os.path.join(directory, name)) as f:
        return json.load(f)


def our_gradients(directory):
    """Every gradient of a bench_step --dump DIR, by parameter name, as float64."""
    return {name[:-4]: np.load(os.path.join(directory, "grads", name)).astype(np.float64)
            for name in os.listdir(os.path.join(directory, "grads")) if name.endswith(".npy")}


def our_parameters(directory, shapes, twin):
    """The parameters of a bench_step --dump DIR as float64, named and shaped as `shapes` (name → shape)
    says, or an error naming what differs; `twin` names the twin there ("jax")."""
    dumped = {f[:-4] for f in os.listdir(os.path.join(directory, "params")) if f.endswith(".npy")}
    if dumped != set(shapes):
        raise SystemExit(f"error: parameter names differ: {twin} only {sorted(set(shapes) - dumped)}, "
                         f"ours only {sorted(dumped - set(shapes))}")
    params = {name: np.load(os.path.join(directory, "params", name + ".npy")).astype(np.float64) for name in shapes}
    for name, shape in shapes.items():
        if params[name].shape != shape:
            raise SystemExit(f"error: {name} is {params[name].shape} in ours, {shape} here")
    return params


def print_check(head, ours, count, ref_loss, mine, yardstick, passed, twin, **extra):
    """Prints a twin's --check line: `head` (the model's settings), the twin's parameter `count` and
    ours, the losses, compare()'s fields of ours, the `twin`'s float32 yardstick, `extra` and the
    tolerances; then exits 1 unless ours passed with as many parameters."""
    print(json.dumps({**head, "parameters": count, "our_parameters": ours["parameters"], "loss_ours": ours["loss"],
                      f"loss_{twin}_f64": ref_loss, "grad_norm_ours": ours["grad_norm"], **mine,
                      f"{twin}_f32": yardstick, **extra, "tolerance": {"loss": LOSS_TOL, "grad": GRAD_TOL},
                      "pass": passed}), flush=True)
    if not passed or count != ours["parameters"]:
        sys.exit(1)
