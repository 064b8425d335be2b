"""Reference values for every normalization (tests/test_norm_reference.cpp).

Run with the pip torch:  /tmp/torchenv/bin/python tests/reference/make_norm_refs.py
Writes tests/reference/norms.json:

  {"torch": version, "inputs": {set: {"x": T, "r": T[, "x2": T]}}, "cases": [case, ...]}

T is {"shape": [...], "data": [...]} (row-major). Inputs are shared between the
cases that use the same input set (keeps the file small): x the input, r the
fixed projection (the loss is sum(out * r), so r seeds backward), x2 the input
of BatchNorm's second forward call. Every case holds:

  name, kind (layernorm|rmsnorm|prmsnorm|l2norm|batchnorm), input (set name),
  layout (features: rows are the last axis, gain/bias [n]; channels: x [N, C, H, W],
  rows are the H·W maps, gain/bias [C]), eps, eps_inside, p and k (pRMSNorm:
  k = max(1, floor(n·p)); k = n otherwise), momentum, training (batchnorm),
  gain, bias (absent: no bias), out, grad_x, grad_gain, grad_bias (if bias),
  batchnorm only: running_mean_init/running_var_init (eval cases; training cases
  start from the defaults 0/1), running_mean_1/running_var_1 after the first
  forward, running_mean_2/running_var_2 after a second forward on x2.

Inputs, gains, biases and r are float32 values with three decimals (six for
the small inputs, nine for their running variances), written exactly (checked
below). The outputs are computed in float64 from those float32 values (so the
reference carries no float32 rounding of its own) and written with 7
significant digits (relative error ≤ 5e-7: under 1% of the test's relative
tolerance 1e-4, and the file stays under 400 KB).

RMSNorm is composed here from the formulas (the files were first written with
torch 1.13, which has no RMSNorm; torch's later F.rms_norm has ε inside only and
no pRMSNorm or L2-Norm):
  ε inside:  x * rsqrt(mean(x[..., :k]²) + ε) * g (+ b)
  ε outside: x / (sqrt(mean(x[..., :k]²)) + ε) * g (+ b)
  L2-Norm:   x / sqrt(Σ x² + ε) * g (+ b)      (ε outside: x / (sqrt(Σ x²) + ε))
LayerNorm is torch.nn.functional.layer_norm, BatchNorm F.batch_norm (unbiased
running variance, running = (1 − momentum)·running + momentum·batch).

GroupNorm cases (kind "groupnorm") are torch.nn.GroupNorm run in float64 on an
input set read as x [N, C, *] (channels sets [N, C, H, W], features sets
[N, C] or [N, C, L]), with their own fields:

  name, kind, input, layout (the set's), groups, eps, affine, weight and bias
  (affine only, [C]), out, grad_x, grad_weight and grad_bias (affine only).
"""
import json
import math
import os
import zlib

import torch
import torch.nn.functional as F

DIGITS = 7


def quantize(t, decimals=3):
    """float32 tensor whose values are exactly the decimal numbers written by t_in."""
    return (torch.round(t.double() * 10**decimals) / 10**decimals).float()


def t_in(x, decimals=3):  # exact: the short decimal strings parse to the same float32
    return {"shape": list(x.shape), "data": [round(v, decimals) for v in x.double().reshape(-1).tolist()]}


def t_out(x):
    return {"shape": list(x.shape), "data": [float(f"{v:.{DIGITS}g}") for v in x.detach().reshape(-1).tolist()]}


def gen_for(name):
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


# Input sets: shape, layout, whether BatchNorm cases use it (then x2 is stored).
# "small" sets have a mean square near 1e-5, so ε matters at order 1 there and
# its placement (inside or outside the root) is visible in float32; elsewhere
# ε = 1e-5 changes the output by ~5e-6 relative, below what any float32 test sees.
SETS = {
    "f4x16small": ([4, 16], "features", True),
    "c2x3x3x3small": ([2, 3, 3, 3], "channels", True),
    "f5x7": ([5, 7], "features", True),
    "f3x4x33": ([3, 4, 33], "features", True),  # batchnorm: BatchNorm1d, C = 4 over N·L
    "f1x1024": ([1, 1024], "features", False),  # one row: the file must stay < 400 KB
    "c2x3x5x5": ([2, 3, 5, 5], "channels", True),
    "c4x6x8x8": ([4, 6, 8, 8], "channels", True),
    "c2x6x3x4": ([2, 6, 3, 4], "channels", False),  # GroupNorm: 6 channels in 1, 2, 3 or 6 groups
}


def make_input(shape, gen, scale):
    """Non-zero mean, with per-row offsets and scales so rows differ."""
    row_shape = shape[:-1] + [1]
    x = 0.8 + 0.6 * torch.randn(row_shape, generator=gen) + \
        (0.6 + torch.rand(row_shape, generator=gen)) * torch.randn(shape, generator=gen)
    return quantize(scale * x, 6 if scale < 1 else 3)


inputs = {}
for set_name, (shape, layout, bn) in SETS.items():
    g = gen_for(set_name)
    scale = 0.003 if set_name.endswith("small") else 1.0
    if layout == "channels":  # rows are the H·W maps
        n, c, h, w = shape
        x = make_input([n, c, h * w], g, scale).reshape(shape)
        x2 = make_input([n, c, h * w], g, scale).reshape(shape) if bn else None
    else:
        x = make_input(shape, g, scale)
        x2 = make_input(shape, g, scale) if bn else None
    entry = {"x": x, "r": quantize(torch.randn(shape, generator=g))}
    if x2 is not None:
        entry["x2"] = x2
    inputs[set_name] = entry


def rms_family(x, g, b, k, eps, inside, l2, layout):
    """x float64. Rows: last axis (features) or the flattened H·W maps (channels)."""
    if layout == "channels":
        n, c = x.shape[0], x.shape[1]
        rows = x.reshape(n, c, -1)
        g, b = g.reshape(c, 1), (None if b is None else b.reshape(c, 1))
    else:
        rows = x
    q = rows[..., :k].pow(2)
    q = q.sum(-1, keepdim=True) if l2 else q.mean(-1, keepdim=True)
    d = torch.sqrt(q + eps) if inside else torch.sqrt(q) + eps
    y = rows / d * g
    if b is not None:
        y = y + b
    return y.reshape(x.shape)


def layer(x, g, b, eps, layout):
    if layout == "channels":
        n, c = x.shape[0], x.shape[1]
        rows = x.reshape(n, c, -1)
        y = F.layer_norm(rows, rows.shape[-1:], None, None, eps) * g.reshape(c, 1) + b.reshape(c, 1)
        return y.reshape(x.shape)
    return F.layer_norm(x, x.shape[-1:], g, b, eps)


cases = []


def case(kind, set_name, eps=1e-5, inside=True, p=None, bias=None, training=True, momentum=0.1, suffix=""):
    shape, layout, _ = SETS[set_name]
    tag = {"layernorm": "", "batchnorm": "_train" if training else "_eval"}.get(kind, "")
    if kind in ("rmsnorm", "prmsnorm", "l2norm"):
        tag = ("_epsin" if inside else "_epsout") + ("_bias" if bias else "")
    if p is not None:
        tag += f"_p{p}"
    name = f"{kind}{tag}{suffix}_{set_name}"
    gen = gen_for(name)
    x32, r32 = inputs[set_name]["x"], inputs[set_name]["r"]
    n = shape[2] * shape[3] if layout == "channels" else shape[-1]
    npar = shape[1] if (layout == "channels" or kind == "batchnorm") else shape[-1]
    has_bias = kind in ("layernorm", "batchnorm") or bool(bias)
    g32 = quantize(1 + 0.3 * torch.randn(npar, generator=gen))
    b32 = quantize(0.2 * torch.randn(npar, generator=gen)) if has_bias else None
    k = max(1, math.floor(n * p)) if p is not None else n

    x = x32.double().requires_grad_()
    g = g32.double().requires_grad_()
    b = b32.double().requires_grad_() if has_bias else None
    c = {"name": name, "kind": kind, "input": set_name, "layout": layout, "eps": eps, "eps_inside": inside,
         "p": p if p is not None else 1.0, "k": k, "momentum": momentum, "training": training, "gain": t_in(g32)}
    if has_bias:
        c["bias"] = t_in(b32)
    if kind == "layernorm":
        out = layer(x, g, b, eps, layout)
    elif kind == "batchnorm":
        if training:
            rm, rv = torch.zeros(npar, dtype=torch.float64), torch.ones(npar, dtype=torch.float64)
        else:
            sc, dm, dv = (0.003, 6, 9) if set_name.endswith("small") else (1.0, 3, 3)
            rm32 = quantize(sc * (0.8 + 0.5 * torch.randn(npar, generator=gen)), dm)
            rv32 = quantize(sc * sc * (0.5 + 2 * torch.rand(npar, generator=gen)), dv)
            c["running_mean_init"], c["running_var_init"] = t_in(rm32, dm), t_in(rv32, dv)
            rm, rv = rm32.double(), rv32.double()
        out = F.batch_norm(x, rm, rv, g, b, training=training, momentum=momentum, eps=eps)
        c["running_mean_1"], c["running_var_1"] = t_out(rm), t_out(rv)
        F.batch_norm(inputs[set_name]["x2"].double(), rm, rv, g.detach(), b.detach(), training=training,
                     momentum=momentum, eps=eps)
        c["running_mean_2"], c["running_var_2"] = t_out(rm), t_out(rv)
    else:
        out = rms_family(x, g, b, k, eps, inside, kind == "l2norm", layout)
    (out * r32.double()).sum().backward()
    c["out"], c["grad_x"], c["grad_gain"] = t_out(out), t_out(x.grad), t_out(g.grad)
    if has_bias:
        c["grad_bias"] = t_out(b.grad)
    cases.append(c)

    # How far torch's own float32 computation lands from this reference: the
    # scale of honest float32 error the C++ tolerance has to admit.
    if kind != "batchnorm":
        x_, g_ = x32.clone().requires_grad_(), g32.clone().requires_grad_()
        b_ = b32.clone().requires_grad_() if has_bias else None
        o_ = layer(x_, g_, b_, eps, layout) if kind == "layernorm" else \
            rms_family(x_, g_, b_, k, eps, inside, kind == "l2norm", layout)
        (o_ * r32).sum().backward()
        err = max(((o_.double() - out).abs().max() / out.pow(2).mean().sqrt()).item(),
                  ((x_.grad.double() - x.grad).abs().max() / x.grad.pow(2).mean().sqrt()).item(),
                  ((g_.grad.double() - g.grad).abs().max() / g.grad.pow(2).mean().sqrt()).item())
        worst[0] = max(worst[0], err)


worst = [0.0]
RMS = ("rmsnorm", "prmsnorm", "l2norm")
for s in ("f5x7", "c2x3x5x5"):  # small sets: every variant
    case("layernorm", s)
    case("rmsnorm", s)
    case("rmsnorm", s, bias=True)
    case("rmsnorm", s, eps=1e-8, inside=False)
    case("rmsnorm", s, eps=1e-8, inside=False, bias=True)
    case("prmsnorm", s, p=0.0625)
    case("prmsnorm", s, p=0.125, bias=True)
    case("prmsnorm", s, p=0.125, eps=1e-8, inside=False)
    case("l2norm", s)
    case("l2norm", s, eps=1e-8, inside=False, bias=True)
    case("batchnorm", s)
    case("batchnorm", s, training=False)
case("batchnorm", "f5x7", momentum=0.3, eps=1e-6, suffix="_m0.3_eps1e-6")
# Rank 3, odd sizes: the feature layout over leading axes; BatchNorm1d (C = 4 over N·L).
case("layernorm", "f3x4x33")
case("rmsnorm", "f3x4x33")
case("prmsnorm", "f3x4x33", p=0.0625)
case("prmsnorm", "f3x4x33", p=0.125, bias=True)
case("batchnorm", "f3x4x33")
# Small inputs (mean square ~1e-5): ε placement and size matter at order 1.
for s in ("f4x16small", "c2x3x3x3small"):
    case("layernorm", s)
    case("rmsnorm", s)
    case("rmsnorm", s, eps=1e-3, inside=False, bias=True)
    case("prmsnorm", s, p=0.125)
    case("l2norm", s, eps=1e-4)
    case("l2norm", s, eps=1e-3, inside=False)
    case("batchnorm", s)
    case("batchnorm", s, training=False)
# Large sets: long reductions, the paper's settings (n = 1024, p = 6.25% -> k = 64
# for MT; p = 12.5% on conv maps for CIFAR), BatchNorm over N·H·W = 256.
case("layernorm", "f1x1024")
case("rmsnorm", "f1x1024", eps=1e-6)
case("prmsnorm", "f1x1024", p=0.0625)
case("prmsnorm", "c4x6x8x8", p=0.125)
case("batchnorm", "c4x6x8x8")



def group_case(set_name, groups, eps=1e-5, affine=True):
    """torch.nn.GroupNorm(groups, C, eps, affine) on the set's x read as [N, C, *]."""
    shape, layout, _ = SETS[set_name]
    name = f"groupnorm_g{groups}" + ("" if affine else "_noaffine") + (f"_eps{eps:g}" if eps != 1e-5 else "") + \
        f"_{set_name}"
    gen = gen_for(name)
    x32, r32 = inputs[set_name]["x"], inputs[set_name]["r"]
    channels = shape[1]
    c = {"name": name, "kind": "groupnorm", "input": set_name, "layout": layout, "groups": groups, "eps": eps,
         "affine": affine}
    results = {}
    for dtype in (torch.float64, torch.float32):
        module = torch.nn.GroupNorm(groups, channels, eps, affine).to(dtype)
        if affine:
            w32 = quantize(1 + 0.3 * torch.randn(channels, generator=gen)) if dtype == torch.float64 else w32
            b32 = quantize(0.2 * torch.randn(channels, generator=gen)) if dtype == torch.float64 else b32
            with torch.no_grad():
                module.weight.copy_(w32)
                module.bias.copy_(b32)
        x = x32.to(dtype).clone().requires_grad_()
        out = module(x)
        (out * r32.to(dtype)).sum().backward()
        results[dtype] = [out, x.grad] + ([module.weight.grad, module.bias.grad] if affine else [])
    if affine:
        c["weight"], c["bias"] = t_in(w32), t_in(b32)
    out, grad_x = results[torch.float64][:2]
    c["out"], c["grad_x"] = t_out(out), t_out(grad_x)
    if affine:
        c["grad_weight"], c["grad_bias"] = t_out(results[torch.float64][2]), t_out(results[torch.float64][3])
    cases.append(c)
    for want, got in zip(results[torch.float64], results[torch.float32]):
        worst[0] = max(worst[0], ((got.double() - want).abs().max() / want.pow(2).mean().sqrt()).item())


# GroupNorm over [N, C, H, W], [N, C, L] and [N, C]: groups of several channels,
# one group (LayerNorm over C·H·W), one channel per group (InstanceNorm), no
# affine, and the small sets where ε is of the order of the variance.
group_case("c2x6x3x4", 3)
group_case("c2x6x3x4", 6)
group_case("c2x6x3x4", 2, affine=False)
group_case("c2x3x5x5", 1)
group_case("f3x4x33", 2)
group_case("f5x7", 1)
group_case("c2x3x3x3small", 3)
group_case("c2x3x3x3small", 1, eps=1e-3, affine=False)

names = [c["name"] for c in cases]
assert len(names) == len(set(names)), "duplicate case names"
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "norms.json")
with open(path, "w") as f:
    json.dump({"torch": torch.__version__,
               "inputs": {s: {k: t_in(v, 6 if s.endswith("small") and k != "r" else 3) for k, v in e.items()}
                          for s, e in inputs.items()},
               "cases": cases}, f, separators=(",", ":"))
# The written inputs parse back to exactly the float32 values used above.
with open(path) as f:
    back = json.load(f)
for s, e in inputs.items():
    for k, v in e.items():
        assert torch.equal(torch.tensor(back["inputs"][s][k]["data"], dtype=torch.float64).float(), v.reshape(-1)), s
print(f"wrote {len(cases)} cases to {path} ({os.path.getsize(path) / 1024:.0f} KB); "
      f"torch float32 vs float64 reference: max |err| / rms(ref) = {worst[0]:.2e}")
