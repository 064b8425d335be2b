"""Reference values for the optimizers, gradient clipping and the learning-rate
schedules (tests/test_optim.cpp, tests/test_clip.cpp).

Run with the pip torch:  /tmp/torchenv/bin/python tests/reference/make_optim_refs.py
Writes tests/reference/optim.json:

  {"torch": version,
   "initial": {param: T},            the parameters before the first step
   "grads": [{param: T}, ...],       the gradient of every step (5 steps); a parameter
                                     missing from a step has no gradient then (.grad None):
                                     "late" gets its first gradient at step 3
   "cases": [case, ...],
   "clip": [clip case, ...],
   "clip_value": [clip value case, ...],
   "schedules": [schedule case, ...]}

  case = {"name", "optimizer" (adam|adamw|sgd),
          "groups": [{"params": [names], "options": {...}}],   torch's option names:
              adam/adamw: lr, beta1, beta2, eps, weight_decay; sgd: lr, momentum,
              dampening, weight_decay, nesterov
          "changes": [{"before_step": k, "beta1"?: x, "lr"?: x}]  applied to every group
                     just before step k (1-based), as a schedule would
          "after": [{param: T}, ...]}       the parameters after steps 1..5

  clip case = {"name", "kind" (global|per_parameter), "max_norm", "grads": {param: T},
               "norm" (global) or "norms": {param: x} (per_parameter), "clipped": {param: T}}
     The clip cases use step 1's gradients ("late" has none there, so it is
     skipped). per_parameter is clip_grad_norm_ called on each parameter alone.

  clip value case = {"name", "clip_value", "grads": {param: T}, "clipped": {param: T}}
     torch.nn.utils.clip_grad_value_ on step 1's gradients.

  schedule case = {"name", "kind" (warmup|cosine|onecycle), "args": {our constructor's
                   arguments by name}, "steps": [s, ...], "lr": [lr(s), ...]}
     lr(s) is the learning rate of update s counted from 1 (optim/schedule.h),
     read from torch's schedulers driving torch.optim.SGD in float64: the lr
     in the optimizer's group before update s, i.e. after s − 1 calls of
     scheduler.step(). With one exception: CosineSchedule without warm-up is
     CosineAnnealingLR read after s calls (our curve starts at lr(0) = base),
     for s from 0. The script asserts that torch's values are the formulas in
     optim/schedule.h; the steps stop where torch's curve and ours part (past
     total_steps torch's cosine rises again and OneCycleLR raises; ours stays
     at its end value, which the C++ test checks).

T is {"shape": [...], "data": [...]} (row-major). Inputs are float32 values with
three decimals ("tiny", a gradient near Adam's eps = 1e-3 in the first case,
has six), written exactly. The outputs are computed by torch.optim in float64
from those float32 values, so the reference carries no float32 rounding of its
own, and written with 10 significant digits (≤ 5e-10 relative, far below the
test's 1e-6). The same runs in float32 are checked below to land within 1e-6 of
the float64 ones: torch's own float32 error fits the bound the C++ test uses.
"""
import json
import math
import os
import zlib

import torch

DIGITS = 10
STEPS = 5
SHAPES = {"w": [3, 4], "b": [4], "tiny": [5], "late": [2, 3]}


def gen_for(name):
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


def quantize(t, decimals=3):
    """float32 tensor whose values are exactly the decimal numbers written by t_in."""
    return (torch.round(t.double() * 10**decimals) / 10**decimals).float()


def t_in(x, decimals=3):  # exact: the short decimal strings parse to the same float32
    return {"shape": list(x.shape), "data": [round(v, decimals) for v in x.double().reshape(-1).tolist()]}


def t_out(x):
    return {"shape": list(x.shape), "data": [float(f"{v:.{DIGITS}g}") for v in x.detach().reshape(-1).tolist()]}


def decimals_of(name):
    return 6 if name == "tiny" else 3


def uniform(shape, gen, lo, hi, decimals):
    return quantize(lo + (hi - lo) * torch.rand(shape, generator=gen), decimals)


g = gen_for("initial")
initial = {n: uniform(s, g, -1.0, 1.0, 3) for n, s in SHAPES.items()}
g = gen_for("grads")
grads = []
for step in range(1, STEPS + 1):
    gs = {}
    for n, s in SHAPES.items():
        if n == "late" and step < 3:
            continue
        if n == "tiny":  # |g| ~ 1e-3: comparable to eps = 1e-3, so eps's placement shows
            gs[n] = uniform(s, g, -2e-3, 2e-3, 6)
        else:
            gs[n] = uniform(s, g, -1.0, 1.0, 3)
    grads.append(gs)

ALL = list(SHAPES)
# name, optimizer, groups [(params, options)], changes
CASES = [
    ("adam_two_groups", "adam",
     [(["w", "late"], dict(lr=0.05, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0)),
      (["b", "tiny"], dict(lr=0.02, beta1=0.9, beta2=0.99, eps=1e-3, weight_decay=0.0))],
     [dict(before_step=3, beta1=0.5)]),
    ("adam_weight_decay", "adam",
     [(ALL, dict(lr=0.05, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1))],
     [dict(before_step=3, beta1=0.5), dict(before_step=4, lr=0.03)]),
    ("adamw", "adamw",
     [(["w", "b"], dict(lr=0.05, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1)),
      (["tiny", "late"], dict(lr=0.03, beta1=0.8, beta2=0.999, eps=1e-6, weight_decay=0.0))],
     [dict(before_step=3, beta1=0.5)]),
    ("sgd", "sgd",
     [(ALL, dict(lr=0.05, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False))], []),
    ("sgd_momentum", "sgd",
     [(ALL, dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False))], []),
    ("sgd_momentum_weight_decay", "sgd",
     [(ALL, dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=0.1, nesterov=False))],
     [dict(before_step=4, lr=0.02)]),
    ("sgd_nesterov_and_dampening", "sgd",
     [(["w", "b"], dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=0.01, nesterov=True)),
      (["tiny", "late"], dict(lr=0.1, momentum=0.5, dampening=0.3, weight_decay=0.0, nesterov=False))], []),
]


def run(optimizer, groups, changes, dtype):
    params = {n: initial[n].to(dtype).clone().requires_grad_(True) for n in SHAPES}
    torch_groups = []
    for names, o in groups:
        tg = {"params": [params[n] for n in names]}
        if optimizer in ("adam", "adamw"):
            tg.update(lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"], weight_decay=o["weight_decay"])
        else:
            tg.update(lr=o["lr"], momentum=o["momentum"], dampening=o["dampening"],
                      weight_decay=o["weight_decay"], nesterov=o["nesterov"])
        torch_groups.append(tg)
    make = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}[optimizer]
    opt = make(torch_groups, lr=1.0) if optimizer == "sgd" else make(torch_groups)
    after = []
    for step in range(1, STEPS + 1):
        for c in changes:
            if c["before_step"] != step:
                continue
            for tg in opt.param_groups:
                if "beta1" in c:
                    tg["betas"] = (c["beta1"], tg["betas"][1])
                if "lr" in c:
                    tg["lr"] = c["lr"]
        for n, p in params.items():
            p.grad = grads[step - 1][n].to(dtype).clone() if n in grads[step - 1] else None
        opt.step()
        after.append({n: p.detach().clone() for n, p in params.items()})
    return after


cases = []
worst = 0.0
for name, optimizer, groups, changes in CASES:
    after64 = run(optimizer, groups, changes, torch.float64)
    after32 = run(optimizer, groups, changes, torch.float32)
    for a, b in zip(after64, after32):
        for n in SHAPES:
            worst = max(worst, (a[n] - b[n].double()).abs().max().item())
    cases.append({"name": name, "optimizer": optimizer,
                  "groups": [{"params": names, "options": o} for names, o in groups],
                  "changes": changes,
                  "after": [{n: t_out(t) for n, t in a.items()} for a in after64]})
print(f"torch float32 vs float64 after {STEPS} steps: max |difference| {worst:.2e}")
assert worst < 1e-6, "torch's own float32 run does not meet the test's bound"


def clip_case(name, kind, max_norm):
    gs = {n: t.double().clone() for n, t in grads[0].items()}
    params = {n: torch.zeros(SHAPES[n], dtype=torch.float64, requires_grad=True) for n in SHAPES}
    for n, p in params.items():
        p.grad = gs[n].clone() if n in gs else None
    entry = {"name": name, "kind": kind, "max_norm": max_norm,
             "grads": {n: t_in(t, decimals_of(n)) for n, t in grads[0].items()}}
    if kind == "global":
        entry["norm"] = float(torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm))
    else:
        entry["norms"] = {n: float(torch.nn.utils.clip_grad_norm_([p], max_norm))
                          for n, p in params.items() if p.grad is not None}
    entry["clipped"] = {n: t_out(p.grad) for n, p in params.items() if p.grad is not None}
    return entry


clips = [clip_case("global_clipped", "global", 1.0),
         clip_case("global_unchanged", "global", 100.0),
         clip_case("per_parameter", "per_parameter", 0.8)]
for c in clips:
    print(c["name"], c.get("norm", c.get("norms")))



def clip_value_case(name, clip_value):
    params = {n: torch.zeros(SHAPES[n], dtype=torch.float64, requires_grad=True) for n in grads[0]}
    for n, p in params.items():
        p.grad = grads[0][n].double().clone()
    torch.nn.utils.clip_grad_value_(list(params.values()), clip_value)
    return {"name": name, "clip_value": clip_value,
            "grads": {n: t_in(t, decimals_of(n)) for n, t in grads[0].items()},
            "clipped": {n: t_out(p.grad) for n, p in params.items()}}


clip_values = [clip_value_case("clip_value_half", 0.5), clip_value_case("clip_value_tiny", 1e-3)]


def torch_lrs(make_scheduler, base, updates):
    """The lr of each of `updates` updates: lrs[k] is the lr before update k + 1."""
    from torch.optim import lr_scheduler  # noqa: F401 (make_scheduler uses it)
    p = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base)
    scheduler = make_scheduler(opt)
    lrs = []
    for _ in range(updates):
        lrs.append(opt.param_groups[0]["lr"])
        p.grad = torch.zeros_like(p)
        opt.step()
        scheduler.step()
    return lrs


def cosine_formula(s, base, total, min_lr, warmup):
    if s < warmup:
        return base * s / warmup
    if s >= total:
        return min_lr
    return min_lr + (base - min_lr) * (1 + math.cos(math.pi * (s - warmup) / (total - warmup))) / 2


def onecycle_formula(s, max_lr, total_steps, pct_start, div_factor, final_div_factor):
    initial = max_lr / div_factor
    low = initial / final_div_factor
    total = total_steps
    e, p = max(s, 1) - 1, pct_start * total - 1
    if e <= p:
        return max_lr + (initial - max_lr) * (1 + math.cos(math.pi * e / p)) / 2
    return low + (max_lr - low) * (1 + math.cos(math.pi * (e - p) / (total - 1 - p))) / 2


def schedule_case(name, kind, args):
    S = torch.optim.lr_scheduler
    if kind == "warmup":
        base, w = args["base"], args["warmup"]
        steps = list(range(1, 3 * w + 1))
        lrs = torch_lrs(lambda o: S.LinearLR(o, 1 / w, 1.0, total_iters=w - 1), base, len(steps))
        formula = lambda s: base * min(s, w) / w
    elif kind == "cosine":
        base, total, min_lr, w = args["base"], args["total_steps"], args["min_lr"], args["warmup"]
        if w == 0:  # read after s steps, s = 0 … total
            steps = list(range(0, total + 1))
            lrs = torch_lrs(lambda o: S.CosineAnnealingLR(o, T_max=total, eta_min=min_lr), base, total + 1)
        elif w == 1:  # no warm-up to speak of: lr(1) = base, then the cosine
            steps = list(range(1, total + 1))
            lrs = torch_lrs(lambda o: S.CosineAnnealingLR(o, T_max=total - 1, eta_min=min_lr), base, total)
        else:
            steps = list(range(1, total + 1))
            lrs = torch_lrs(lambda o: S.SequentialLR(
                o, [S.LinearLR(o, 1 / w, 1.0, total_iters=w - 1),
                    S.CosineAnnealingLR(o, T_max=total - w, eta_min=min_lr)], milestones=[w - 1]), base, total)
        formula = lambda s: cosine_formula(s, base, total, min_lr, w)
    else:
        total = args["total_steps"]
        steps = list(range(1, total + 1))
        lrs = torch_lrs(lambda o: S.OneCycleLR(
            o, max_lr=args["max_lr"], total_steps=total, pct_start=args["pct_start"], div_factor=args["div_factor"],
            final_div_factor=args["final_div_factor"], cycle_momentum=False), args["max_lr"], total)
        formula = lambda s: onecycle_formula(s, **args)
    for s, lr in zip(steps, lrs):
        assert abs(lr - formula(s)) <= 1e-12 * max(abs(lr), 1e-12), (name, s, lr, formula(s))
    return {"name": name, "kind": kind, "args": args, "steps": steps, "lr": [float(f"{v:.{DIGITS}g}") for v in lrs]}


schedules = [
    schedule_case("warmup_5", "warmup", dict(base=0.1, warmup=5)),
    schedule_case("warmup_1", "warmup", dict(base=0.02, warmup=1)),
    schedule_case("cosine_warmup", "cosine", dict(base=0.1, total_steps=20, min_lr=1e-3, warmup=5)),
    schedule_case("cosine_no_warmup", "cosine", dict(base=0.05, total_steps=12, min_lr=0.0, warmup=0)),
    schedule_case("cosine_warmup_1", "cosine", dict(base=3e-4, total_steps=10, min_lr=3e-5, warmup=1)),
    schedule_case("onecycle_defaults", "onecycle",
                  dict(max_lr=0.01, total_steps=100, pct_start=0.3, div_factor=25.0, final_div_factor=1e4)),
    schedule_case("onecycle_fractional_peak", "onecycle",
                  dict(max_lr=0.4, total_steps=10, pct_start=0.25, div_factor=10.0, final_div_factor=100.0)),
]

out = {"torch": torch.__version__,
       "initial": {n: t_in(t) for n, t in initial.items()},
       "grads": [{n: t_in(t, decimals_of(n)) for n, t in gs.items()} for gs in grads],
       "cases": cases, "clip": clips, "clip_value": clip_values, "schedules": schedules}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim.json")
with open(path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print(f"wrote {path}: {os.path.getsize(path)} bytes")
