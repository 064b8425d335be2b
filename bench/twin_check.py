"""What every twin's --check reports: how far a computation of our model's loss and gradients (ours,
read from a bench_step --dump, or the twin's own float32 run as a yardstick) is from the twin's
float64 reference. Needs numpy only; used by transformer_torch.py, rnnsearch_jax.py and
convpool_jax.py.
"""
import math

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
