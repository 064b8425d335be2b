"""Reference values for every differentiable op of autograd/ops.h (tests/test_ops_reference.cpp).

Run with any Python that has torch (`pip install torch`, e.g. in a venv):
  python -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch
  /tmp/torchenv/bin/python tests/reference/make_op_refs.py
Writes tests/reference/ops.json, {"ops": [every op name], "cases": [...]}, one case per line:

  name     unique case name
  op       the rg:: function, as named in the C++ table (add_scalar is add(Var, float), sum_all is sum(x), ...)
  args     everything that is not a differentiable float input: axes, flags, scalars, integer indices
           ({"shape", "data"}) and float masks / row weights ({"shape", "data"})
  inputs   the float inputs, each {"shape", "data"} (flat, row-major), in the op's argument order
  outputs  the forward result(s); a list because split returns several
  r        one fixed projection per output, same shape
  grads    d sum_k sum(outputs[k] * r[k]) / d inputs[i], same order as inputs

Inputs and r are float32 draws from a torch.Generator seeded with crc32(name). The op itself is
evaluated in float64 on those exact float32 values and rounded to float32 only when written, so the
reference is the true answer to < 1 ulp and the C++ tolerance only has to cover our float32 error.
Inputs of kinked ops (relu, abs, leaky_relu, clamp, max, min, maximum, topk, l1_loss, huber_loss) keep
>= 0.01 from kinks and ties, except the *_tie / *_at_zero / *_at_bounds cases, which pin the tie rules
ops.h documents. Dropout and multinomial are random, and argmax, argmin and topk's indices are integers:
they are tested in C++ only.
"""
import json
import os
import zlib

import torch
import torch.nn.functional as F

OPS = [  # every differentiable op of ops.h except dropout and relu_dropout; the C++ table must know exactly these
    "add", "sub", "mul", "div", "maximum", "add_scalar", "mul_scalar",
    "neg", "exp", "log", "tanh", "sigmoid", "relu", "leaky_relu", "sqrt", "rsqrt", "square", "abs",
    "clamp", "scalar_sub", "gelu", "silu", "swiglu", "softplus", "pow",
    "sum_all", "sum", "sum_axes", "mean_all", "mean", "mean_axes", "var", "var_axes", "std", "std_axes",
    "max", "min", "max_all", "min_all",
    "matmul",
    "reshape", "transpose", "permute", "concat", "stack", "split", "slice", "squeeze", "unsqueeze", "flatten",
    "index_select", "gather", "embedding", "topk",
    "softmax", "log_softmax", "cross_entropy",
    "mse_loss", "l1_loss", "huber_loss", "nll_loss", "binary_cross_entropy_with_logits",
    "masked_fill", "where",
]

cases = []
gen = None  # the current case's generator


def f32(v):
    """A Python float rounded to float32, so torch sees exactly what the C++ side uses."""
    return torch.tensor(v, dtype=torch.float32).item()


def t(x):
    x = x.detach().to(torch.float32)
    return {"shape": list(x.shape), "data": [float(f"{v:.9g}") + 0.0 for v in x.reshape(-1).tolist()]}  # no -0.0


def ints(shape, values):
    return {"shape": list(shape), "data": [int(v) for v in values]}


def randn(*shape, scale=1.0):
    return (scale * torch.randn(tuple(shape), generator=gen)).to(torch.float32)


def uniform(lo, hi, *shape):
    return (lo + (hi - lo) * torch.rand(tuple(shape), generator=gen)).to(torch.float32)


def away_from(x, points, gap=0.02, push=0.05):
    """Moves elements within `gap` of a kink to `push` beyond it."""
    for p in points:
        d = x - p
        x = torch.where(d.abs() < gap, p + torch.where(d >= 0, push, -push), x).to(torch.float32)
    return x


def start(name):
    global gen
    assert all(c["name"] != name for c in cases), f"duplicate case {name}"
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))


def case(name, op, fn, inputs, args=None):
    """fn(list of float64 leaves) -> tensor or list of tensors. Inputs must be drawn after start(name)."""
    assert op in OPS, op
    leaves = [x.to(torch.float64).requires_grad_() for x in inputs]
    outs = fn(leaves)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    rs = [randn(*o.shape) for o in outs]
    loss = sum((o * r.to(torch.float64)).sum() for o, r in zip(outs, rs))
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    grads = [torch.zeros_like(x) if g is None else g for x, g in zip(leaves, grads)]
    cases.append({
        "name": name, "op": op, "args": args or {},
        "inputs": [t(x) for x in inputs], "outputs": [t(o) for o in outs],
        "r": [t(r) for r in rs], "grads": [t(g) for g in grads],
    })


# ---- elementwise binary, broadcasting ----
def first_max_where(a, b):
    """maximum with ops.h's rule: the gradient goes to the larger, ties to a."""
    return torch.where(a >= b, a, b)


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": first_max_where,
}
BROADCASTS = {
    "same": ([3, 5], [3, 5]),
    "row": ([4, 5], [5]),
    "mid": ([2, 3, 4], [2, 1, 4]),
    "outer": ([3, 1], [1, 5]),
    "lead": ([3], [2, 4, 3]),
    "scalar_b": ([3, 5], []),
    "scalar_a": ([], [2, 3]),
}
for op, fn in BINARY.items():
    for tag, (sa, sb) in BROADCASTS.items():
        name = f"{op}_{tag}"
        start(name)
        while True:
            a = randn(*sa)
            b = uniform(0.5, 2.0, *sb) * torch.where(randn(*sb) < 0, -1.0, 1.0) if op == "div" else randn(*sb)
            if op != "maximum" or (a - b).abs().min() >= 0.01:
                break
        if op == "maximum":
            assert torch.equal(first_max_where(a, b), torch.maximum(a, b))
        case(name, op, lambda v, fn=fn: fn(v[0], v[1]), [a, b])

start("maximum_tie")  # exact ties (multiples of 0.25) in both broadcast directions
a = torch.tensor([[0.25, -0.5, 1.0, 0.0], [0.75, 0.75, -1.0, 2.0], [-0.25, 0.5, 0.5, 0.0]])
b = torch.tensor([0.25, 0.75, 0.5, 0.0])
case("maximum_tie", "maximum", lambda v: first_max_where(v[0], v[1]), [a, b])

start("add_scalar")
case("add_scalar", "add_scalar", lambda v: v[0] + f32(0.75), [randn(3, 5)], {"s": 0.75})
start("mul_scalar")
case("mul_scalar", "mul_scalar", lambda v: v[0] * f32(-1.5), [randn(2, 3, 4)], {"s": -1.5})

# ---- elementwise unary ----
UNARY = {
    "neg": (lambda x: -x, lambda: randn(3, 7)),
    "exp": (torch.exp, lambda: randn(3, 7)),
    "log": (torch.log, lambda: uniform(0.2, 3.0, 3, 7)),
    "tanh": (torch.tanh, lambda: randn(3, 7, scale=1.5)),
    "sigmoid": (torch.sigmoid, lambda: randn(3, 7, scale=2.0)),
    "relu": (torch.relu, lambda: away_from(randn(3, 7), [0.0])),
    "sqrt": (torch.sqrt, lambda: uniform(0.2, 3.0, 3, 7)),
    "rsqrt": (torch.rsqrt, lambda: uniform(0.2, 3.0, 3, 7)),
    "square": (torch.square, lambda: randn(3, 7)),
    "abs": (torch.abs, lambda: away_from(randn(3, 7), [0.0])),
}
for op, (fn, draw) in UNARY.items():
    start(op)
    case(op, op, lambda v, fn=fn: fn(v[0]), [draw()])

start("relu_rank3")
case("relu_rank3", "relu", lambda v: torch.relu(v[0]), [away_from(randn(2, 3, 5), [0.0])])
start("abs_at_zero")  # ops.h: d|x|/dx = 0 at 0
case("abs_at_zero", "abs", lambda v: torch.abs(v[0]), [torch.tensor([-1.5, 0.0, 0.5, 0.0, -0.25])])
for slope in (0.01, 0.2):
    name = f"leaky_relu_{slope}"
    start(name)
    case(name, "leaky_relu", lambda v, s=slope: F.leaky_relu(v[0], f32(s)), [away_from(randn(3, 7), [0.0])],
         {"slope": slope})
for lo, hi in ((-0.5, 0.8), (0.0, 1.0)):
    name = f"clamp_{lo}_{hi}"
    start(name)
    case(name, "clamp", lambda v, lo=lo, hi=hi: torch.clamp(v[0], f32(lo), f32(hi)),
         [away_from(randn(3, 7), [f32(lo), f32(hi)])], {"lo": lo, "hi": hi})


def clamp_inclusive(x, lo, hi):
    """clamp with ops.h's rule: gradient 1 inside [lo, hi], bounds included. (Torch's own rule has
    changed: 2.15 gives 0 at a scalar bound and 1/2 at a tensor bound.)"""
    y = torch.where((x >= lo) & (x <= hi), x, torch.clamp(x, lo, hi).detach())
    assert torch.equal(y, torch.clamp(x, lo, hi))
    return y


start("clamp_at_bounds")
case("clamp_at_bounds", "clamp", lambda v: clamp_inclusive(v[0], -0.5, 0.75),
     [torch.tensor([-0.5, 0.75, -1.0, 1.0, 0.25, -0.5])], {"lo": -0.5, "hi": 0.75})
start("scalar_sub")
case("scalar_sub", "scalar_sub", lambda v: f32(2.5) - v[0], [randn(3, 5)], {"s": 2.5})
for approximate in ("none", "tanh"):
    name = f"gelu_{approximate}"
    start(name)
    case(name, "gelu", lambda v, a=approximate: F.gelu(v[0], approximate=a), [randn(3, 7, scale=2.0)],
         {"approximate": approximate})
    name = f"gelu_{approximate}_tails"  # far out on both sides, where 1 + erf(x/sqrt 2) would cancel
    start(name)
    case(name, "gelu", lambda v, a=approximate: F.gelu(v[0], approximate=a),
         [torch.tensor([-12.0, -8.0, -5.0, -3.5, -1e-3, 0.0, 1e-3, 3.5, 5.0, 8.0])], {"approximate": approximate})
start("silu")
case("silu", "silu", lambda v: F.silu(v[0]), [randn(3, 7, scale=2.0)])
start("silu_tails")
case("silu_tails", "silu", lambda v: F.silu(v[0]), [torch.tensor([-30.0, -12.0, -4.0, 0.0, 4.0, 12.0, 30.0])])
start("swiglu")  # LLaMA's feed-forward gate: silu(a) * b
case("swiglu", "swiglu", lambda v: F.silu(v[0]) * v[1], [randn(3, 7, scale=2.0), randn(3, 7)])
for name, beta, threshold, x in (  # inputs stay >= 0.1 from beta*x = threshold, where torch switches to x
        ("softplus", 1.0, 20.0, torch.tensor([-40.0, -18.0, -5.0, -1.0, -0.25, 0.0, 0.5, 2.0, 19.5, 20.5, 60.0])),
        ("softplus_beta2_threshold5", 2.0, 5.0, None),
        ("softplus_beta_negative", -1.5, 20.0, None)):
    start(name)
    if x is None:
        x = away_from(randn(3, 7, scale=3.0), [f32(threshold / beta)], gap=0.1, push=0.2)
    case(name, "softplus", lambda v, b=beta, th=threshold: F.softplus(v[0], beta=f32(b), threshold=f32(th)), [x],
         {"beta": beta, "threshold": threshold})
for name, p, draw in (("pow_2", 2.0, lambda: randn(3, 5)), ("pow_3_negative", 3.0, lambda: randn(3, 5)),
                      ("pow_half", 0.5, lambda: uniform(0.2, 3.0, 3, 5)),
                      ("pow_minus_1.5", -1.5, lambda: uniform(0.5, 2.0, 3, 5)),
                      ("pow_2.7", 2.7, lambda: uniform(0.1, 2.0, 3, 5)), ("pow_1", 1.0, lambda: randn(3, 5)),
                      ("pow_0", 0.0, lambda: torch.tensor([[-1.5, 0.0, 2.0], [0.25, -0.0, 3.0]]))):
    start(name)
    case(name, "pow", lambda v, p=p: torch.pow(v[0], f32(p)), [draw()], {"exponent": p})


# ---- reductions ----
def first_max(x, axis, keepdim):
    """max over an axis with ops.h's rule: the gradient goes to the first maximum."""
    m = x.detach().amax(axis, keepdim=True)
    eq = (x.detach() == m).to(torch.int64)
    first = (eq == 1) & (eq.cumsum(axis) == 1)
    return (x * first).sum(axis, keepdim=keepdim)


def spread_out(x, axis, gap=0.01):
    """Every two values along `axis` at least `gap` apart."""
    d = x.sort(axis).values.diff(dim=axis)
    return d.numel() == 0 or d.min() >= gap


def distinct_top(x, axis, gap=0.01):
    top2 = x.topk(2, dim=axis).values if x.shape[axis] > 1 else None
    return top2 is None or (top2.select(axis, 0) - top2.select(axis, 1)).min() >= gap


start("sum_all")
case("sum_all", "sum_all", lambda v: v[0].sum(), [randn(2, 3, 5)])
start("sum_all_long")
case("sum_all_long", "sum_all", lambda v: v[0].sum(), [randn(4, 75)])
start("mean_all")
case("mean_all", "mean_all", lambda v: v[0].mean(), [randn(2, 3, 5)])
start("mean_all_long")
case("mean_all_long", "mean_all", lambda v: v[0].mean(), [randn(3, 101)])
for op in ("sum", "mean", "max"):
    for axis in (0, 1, 2, -1):
        for keepdim in (False, True):
            name = f"{op}_axis{axis}_{'keep' if keepdim else 'drop'}"
            start(name)
            x = randn(2, 3, 5)
            while op == "max" and not distinct_top(x, axis):
                x = randn(2, 3, 5)
            if op == "max":
                assert torch.equal(first_max(x, axis, keepdim), x.max(axis, keepdim=keepdim).values)
                fn = lambda v, a=axis, k=keepdim: first_max(v[0], a, k)
            else:
                fn = lambda v, a=axis, k=keepdim, op=op: getattr(v[0], op)(a, keepdim=k)
            case(name, op, fn, [x], {"axis": axis, "keepdim": keepdim})
    name = f"{op}_rank1"  # down to a scalar
    start(name)
    x = randn(7)
    while op == "max" and not distinct_top(x, 0):
        x = randn(7)
    fn = (lambda v: first_max(v[0], 0, False)) if op == "max" else (lambda v, op=op: getattr(v[0], op)(0))
    case(name, op, fn, [x], {"axis": 0, "keepdim": False})
for op in ("sum", "mean"):
    name = f"{op}_long_axis"
    start(name)
    case(name, op, lambda v, op=op: getattr(v[0], op)(1), [randn(2, 150)], {"axis": 1, "keepdim": False})
start("max_tie")  # ties: the first maximum along the axis gets the gradient
x = torch.tensor([[[1.0, 0.5, 1.0], [0.25, 0.25, -1.0]], [[2.0, 2.0, 2.0], [-0.5, 0.0, 0.0]]])
case("max_tie", "max", lambda v: first_max(v[0], -1, False), [x], {"axis": -1, "keepdim": False})
start("max_tie_axis0")
x = torch.tensor([[0.5, 1.0, -2.0], [0.5, 0.75, -2.0], [0.25, 1.0, -3.0]])
case("max_tie_axis0", "max", lambda v: first_max(v[0], 0, True), [x], {"axis": 0, "keepdim": True})


def first_min(x, axis, keepdim):
    return -first_max(-x, axis, keepdim)


for axis in (0, 1, -1):
    for keepdim in (False, True):
        name = f"min_axis{axis}_{'keep' if keepdim else 'drop'}"
        start(name)
        x = randn(2, 3, 5)
        while not distinct_top(-x, axis):
            x = randn(2, 3, 5)
        assert torch.equal(first_min(x, axis, keepdim), x.min(axis, keepdim=keepdim).values)
        case(name, "min", lambda v, a=axis, k=keepdim: first_min(v[0], a, k), [x], {"axis": axis, "keepdim": keepdim})
start("min_tie")  # ties: the first minimum along the axis gets the gradient
x = torch.tensor([[[1.0, 0.5, 0.5], [0.25, 0.25, -1.0]], [[2.0, 2.0, 2.0], [-0.5, 0.0, -0.5]]])
case("min_tie", "min", lambda v: first_min(v[0], -1, False), [x], {"axis": -1, "keepdim": False})
for op, fn in (("max_all", torch.max), ("min_all", torch.min)):
    start(op)
    case(op, op, lambda v, fn=fn: fn(v[0]), [randn(3, 5)])
    name = f"{op}_ties"  # torch shares the gradient evenly among the elements equal to the result
    start(name)
    x = torch.tensor([[1.5, -2.0, 1.5, 0.0], [-2.0, 1.5, 0.25, -2.0]])
    case(name, op, lambda v, fn=fn: fn(v[0]), [x])

# An empty axis list reduces every axis, torch's dim=[]; torch is asked with dim=None, the same
# values, because torch 2.15's var and std take dim=[] for a reduction over 1 element in their
# backward (an infinite gradient).
SUM_AXES = [  # name tag, shape, axes, keepdim
    ("02", [2, 3, 4, 5], [0, 2], False), ("13_keep", [2, 3, 4, 5], [1, 3], True),
    ("neg", [2, 3, 4], [-1, 0], False), ("all", [3, 4], [], False), ("all_keep", [2, 3, 2], [], True),
    ("one", [3, 4], [1], False), ("unsorted", [2, 3, 4], [2, 0, 1], False),
]
for op in ("sum", "mean"):
    for tag, shape, axes, keepdim in SUM_AXES:
        name = f"{op}_axes_{tag}"
        start(name)
        case(name, f"{op}_axes", lambda v, a=axes or None, k=keepdim, op=op: getattr(v[0], op)(a, keepdim=k),
             [randn(*shape)], {"axes": axes, "keepdim": keepdim})
for op in ("var", "std"):
    for name, shape, axis, correction, keepdim, draw in (
            (f"{op}_axis1", [3, 5], 1, 1, False, None), (f"{op}_axis0_population_keep", [4, 3], 0, 0, True, None),
            (f"{op}_last_correction2", [2, 3, 6], -1, 2, False, None),
            (f"{op}_offset_mean", [3, 8], 1, 1, False, lambda: 100.0 + randn(3, 8))):
        start(name)
        x = draw() if draw else randn(*shape)
        case(name, op, lambda v, a=axis, c=correction, k=keepdim, op=op: getattr(torch, op)(v[0], a, correction=c,
                                                                                            keepdim=k),
             [x], {"axis": axis, "correction": correction, "keepdim": keepdim})
    for name, shape, axes, correction, keepdim in (
            (f"{op}_axes_02", [2, 3, 4], [0, 2], 1, False), (f"{op}_axes_12_keep", [2, 3, 4], [1, 2], 0, True),
            (f"{op}_axes_all", [3, 5], [], 1, False)):
        start(name)
        case(name, f"{op}_axes",
             lambda v, a=axes or None, c=correction, k=keepdim, op=op: getattr(torch, op)(v[0], a, correction=c,
                                                                                         keepdim=k),
             [randn(*shape)], {"axes": axes, "correction": correction, "keepdim": keepdim})
name = "std_constant_row"  # std = 0 there: torch's gradient is 0, not NaN
start(name)
x = torch.tensor([[0.5, 0.5, 0.5, 0.5], [1.0, -0.5, 0.25, 2.0]])
case(name, "std", lambda v: torch.std(v[0], 1), [x], {"axis": 1, "correction": 1, "keepdim": False})


# ---- matrix products ----
def mm(ta, tb):
    def fn(v):
        a = v[0].transpose(-1, -2) if ta else v[0]
        b = v[1].transpose(-1, -2) if tb else v[1]
        return torch.matmul(a, b)
    return fn


MATMULS = [  # name, a's stored shape, b's stored shape, trans_a, trans_b
    ("matmul_nn", [3, 4], [4, 5], False, False),
    ("matmul_tn", [4, 3], [4, 5], True, False),
    ("matmul_nt", [3, 4], [5, 4], False, True),
    ("matmul_tt", [4, 3], [5, 4], True, True),
    ("matmul_long_k", [3, 64], [64, 5], False, False),
    ("matmul_vector_rows", [1, 7], [7, 1], False, False),
    ("matmul_batched", [2, 3, 4], [2, 4, 5], False, False),
    ("matmul_batched_tn", [2, 4, 3], [2, 4, 5], True, False),
    ("matmul_batched_nt", [2, 3, 4], [2, 5, 4], False, True),
    ("matmul_batched_tt", [3, 4, 3], [3, 5, 4], True, True),
    ("matmul_3d_2d", [2, 3, 4], [4, 5], False, False),
    ("matmul_3d_2d_nt", [2, 3, 4], [5, 4], False, True),
    ("matmul_4d_2d", [2, 2, 3, 4], [4, 5], False, False),
]
for name, sa, sb, ta, tb in MATMULS:
    start(name)
    case(name, "matmul", mm(ta, tb), [randn(*sa), randn(*sb)], {"trans_a": ta, "trans_b": tb})

# ---- shapes ----
for name, shape, dims in (("reshape_infer", [2, 3, 5], [5, -1]), ("reshape_flat", [6, 5], [-1]),
                          ("reshape_unsqueeze", [2, 3, 5], [3, 1, 10])):
    start(name)
    case(name, "reshape", lambda v, d=dims: v[0].reshape(d), [randn(*shape)], {"dims": dims})
for name, shape, a0, a1 in (("transpose_2d", [3, 5], 0, 1), ("transpose_outer", [2, 3, 5], 0, 2),
                            ("transpose_neg", [2, 3, 5], 1, -1), ("transpose_4d", [2, 3, 1, 2], 0, 2)):
    start(name)
    case(name, "transpose", lambda v, a0=a0, a1=a1: v[0].transpose(a0, a1), [randn(*shape)],
         {"axis0": a0, "axis1": a1})
for name, shape, order in (("permute_201", [2, 3, 5], [2, 0, 1]), ("permute_120", [2, 3, 5], [1, 2, 0]),
                           ("permute_4d", [2, 3, 1, 2], [3, 1, 0, 2])):
    start(name)
    case(name, "permute", lambda v, o=order: v[0].permute(o), [randn(*shape)], {"order": order})
for name, shapes, axis in (("concat_axis0", [[2, 3], [1, 3], [4, 3]], 0),
                           ("concat_mid", [[2, 1, 4], [2, 3, 4]], 1),
                           ("concat_last", [[2, 3, 2], [2, 3, 1], [2, 3, 3]], -1)):
    start(name)
    case(name, "concat", lambda v, a=axis: torch.cat(v, a), [randn(*s) for s in shapes], {"axis": axis})
for name, axis in (("stack_axis0", 0), ("stack_axis1", 1), ("stack_last", 2)):
    start(name)
    case(name, "stack", lambda v, a=axis: torch.stack(v, a), [randn(3, 4) for _ in range(3)], {"axis": axis})
for name, shape, sizes, axis in (("split_axis0", [7, 4], [2, 4, 1], 0), ("split_mid", [2, 7, 3], [3, 4], 1),
                                 ("split_last", [3, 2, 3], [1, 2], -1)):
    start(name)
    case(name, "split", lambda v, s=sizes, a=axis: torch.split(v[0], s, a), [randn(*shape)],
         {"sizes": sizes, "axis": axis})
for name, shape, axis, s, e in (("slice_axis0", [5, 4], 0, 1, 4), ("slice_mid", [2, 7, 3], 1, 2, 7),
                                ("slice_last", [2, 7, 3], -1, 0, 1)):
    start(name)
    case(name, "slice", lambda v, a=axis, s=s, e=e: v[0].narrow(a, s, e - s), [randn(*shape)],
         {"axis": axis, "start": s, "end": e})
for name, shape, axis in (("squeeze_mid", [2, 1, 3], 1), ("squeeze_neg", [2, 3, 1], -1),
                          ("squeeze_not_one", [2, 3], 1), ("squeeze_scalar", [], 0)):
    start(name)
    case(name, "squeeze", lambda v, a=axis: v[0].squeeze(a), [randn(*shape)], {"axis": axis})
for name, shape, axis in (("unsqueeze_front", [2, 3], 0), ("unsqueeze_mid", [2, 3], 1),
                          ("unsqueeze_end", [2, 3], 2), ("unsqueeze_neg", [2, 3], -1), ("unsqueeze_scalar", [], 0)):
    start(name)
    case(name, "unsqueeze", lambda v, a=axis: v[0].unsqueeze(a), [randn(*shape)], {"axis": axis})
for name, shape, first, last in (("flatten_all", [2, 3, 4], 0, -1), ("flatten_from1", [2, 3, 2, 2], 1, -1),
                                 ("flatten_middle", [2, 3, 2, 2], 1, 2), ("flatten_one_axis", [2, 3], 1, 1),
                                 ("flatten_neg", [2, 3, 2], -2, -1), ("flatten_scalar", [], 0, -1)):
    start(name)
    case(name, "flatten", lambda v, a=first, b=last: v[0].flatten(a, b), [randn(*shape)],
         {"start_axis": first, "end_axis": last})

# ---- indexing ----
for name, shape, axis, index in (("index_select_rows", [5, 3], 0, [4, 0, 4, 2, 4]),
                                 ("index_select_mid", [2, 5, 3], 1, [1, 1, 3]),
                                 ("index_select_last", [4, 5], -1, [4, 0, 0])):
    start(name)
    case(name, "index_select", lambda v, a=axis, i=index: v[0].index_select(a, torch.tensor(i)),
         [randn(*shape)], {"axis": axis, "index": index})
for name, shape, axis, ishape in (("gather_axis0", [4, 3], 0, [6, 3]), ("gather_last", [3, 5], -1, [3, 4]),
                                  ("gather_mid", [2, 4, 3], 1, [2, 5, 3])):
    start(name)
    x = randn(*shape)
    idx = torch.randint(0, shape[axis], ishape, generator=gen)
    case(name, "gather", lambda v, a=axis, i=idx: torch.gather(v[0], a, i), [x],
         {"axis": axis, "index": ints(ishape, idx.reshape(-1).tolist())})
for name, ishape, ids in (("embedding_repeats", [5], [1, 3, 1, 0, 1]),
                          ("embedding_2d_ids", [2, 3], [5, 2, 2, 0, 5, 4])):
    start(name)
    case(name, "embedding", lambda v, i=ids, s=ishape: F.embedding(torch.tensor(i).reshape(s), v[0]),
         [randn(6, 4)], {"ids": ints(ishape, ids)})
for name, shape, k, axis, largest in (("topk_last", [3, 6], 3, -1, True), ("topk_axis0_smallest", [5, 3], 2, 0, False),
                                      ("topk_mid", [2, 5, 3], 4, 1, True), ("topk_all", [2, 4], 4, 1, False),
                                      ("topk_k1", [4, 5], 1, -1, True), ("topk_k0", [3, 4], 0, -1, True)):
    start(name)
    x = randn(*shape)
    while not spread_out(x, axis):  # no near-ties, so the order and the chosen positions are unambiguous
        x = randn(*shape)
    case(name, "topk", lambda v, k=k, a=axis, l=largest: torch.topk(v[0], k, a, largest=l).values, [x],
         {"k": k, "axis": axis, "largest": largest})


# ---- softmax and losses ----
def large(shape, axis):
    """Logits of order 50 in every slice along `axis` (exp would overflow without the max shift)."""
    x = randn(*shape, scale=2.0).movedim(axis, -1).clone()
    x[..., 0] += 50.0
    x[..., -1] -= 50.0
    x[0] += 40.0
    return x.movedim(-1, axis).contiguous()


for op, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
    for tag, shape, axis, draw in (("last", [3, 5], -1, randn), ("axis0", [4, 3], 0, randn),
                                   ("mid", [2, 3, 4], 1, randn), ("large_last", [3, 5], -1, None),
                                   ("large_axis0", [5, 3], 0, None)):
        name = f"{op}_{tag}"
        start(name)
        x = randn(*shape, scale=2.0) if draw else large(shape, axis)
        case(name, op, lambda v, a=axis, fn=fn: fn(v[0], a), [x], {"axis": axis})


def cross_entropy(logits, targets, ignore_index=-100, smoothing=0.0, row_weights=None, mean=True):
    """ops.h: l_i = -sum_c q_ic log p_ic with q = (1-eps) onehot + eps/C; ignored rows weigh 0;
    loss = sum w_i l_i / sum w_i (mean) or sum w_i l_i. Logits [N, C, d...] are the rows [N*d..., C]
    (class axis last); targets (a flat list) and row weights are [N, d...] in that order."""
    if logits.dim() > 2:
        c = logits.shape[1]
        rows = logits.movedim(1, -1).reshape(-1, c)
        w = None if row_weights is None else row_weights.reshape(-1)
        total = cross_entropy(rows, targets, ignore_index, smoothing, w, mean)
        if row_weights is None:  # cross-check the whole loss against torch's own [N, C, d...] form
            t = torch.tensor(targets).reshape(logits.shape[:1] + logits.shape[2:])
            want = F.cross_entropy(logits, t, ignore_index=ignore_index, label_smoothing=smoothing,
                                   reduction="mean" if mean else "sum")
            assert torch.allclose(total, want, atol=1e-12), (total, want)
        return total
    n, c = logits.shape
    t = torch.tensor(targets)
    keep = t != ignore_index
    logp = torch.log_softmax(logits, -1)
    picked = logp.gather(1, torch.where(keep, t, 0).unsqueeze(1)).squeeze(1)
    rows = -(1 - smoothing) * picked - smoothing / c * logp.sum(1)
    w = keep.to(logits.dtype) * (1 if row_weights is None else row_weights.to(logits.dtype))
    # cross-check the per-row losses against torch's own implementation
    torch_rows = F.cross_entropy(logits, torch.where(keep, t, -100), reduction="none", label_smoothing=smoothing)
    assert torch.allclose(torch.where(keep, rows, 0.0), torch_rows, atol=1e-12)
    total = (w * rows).sum()
    return total / w.sum() if mean else total


CE_CASES = [  # name, N, C, targets, options
    ("ce_plain", 5, 7, [3, 0, 6, 3, 1], {}),
    ("ce_ignore", 5, 7, [3, -100, 6, -100, 1], {}),
    ("ce_ignore_valid_class", 6, 5, [2, 0, 2, 4, 1, 2], {"ignore_index": 2}),
    ("ce_smoothing", 5, 7, [3, 0, 6, 3, 1], {"label_smoothing": 0.1}),
    ("ce_row_mask", 5, 7, [3, 0, 6, 3, 1], {"row_weights": [1, 0, 1, 1, 0]}),
    ("ce_row_weights", 4, 3, [2, 0, 1, 1], {"row_weights": [0.5, 2.0, 1.0, 0.25]}),
    ("ce_sum", 5, 7, [3, 0, 6, 3, 1], {"mean": False}),
    ("ce_smoothing_ignore", 6, 5, [4, -100, 0, 1, -100, 2], {"label_smoothing": 0.1}),
    ("ce_all_options_sum", 6, 5, [4, 1, 0, -1, 3, 2],
     {"ignore_index": -1, "label_smoothing": 0.2, "row_weights": [1, 1, 0, 1, 0.5, 1], "mean": False}),
    ("ce_large_logits", 4, 5, [0, 4, 2, 0], {"label_smoothing": 0.1}),
]
for name, n, c, targets, opts in CE_CASES:
    start(name)
    x = large([n, c], -1) if "large" in name else randn(n, c, scale=1.5)
    weights = opts.get("row_weights")
    wt = None if weights is None else torch.tensor(weights, dtype=torch.float32)
    eps = f32(opts.get("label_smoothing", 0.0))
    args = {"targets": ints([n], targets), "ignore_index": opts.get("ignore_index", -100),
            "label_smoothing": opts.get("label_smoothing", 0.0), "mean": opts.get("mean", True)}
    if wt is not None:
        args["row_weights"] = t(wt)
    case(name, "cross_entropy",
         lambda v, tg=targets, o=opts, w=wt, e=eps: cross_entropy(v[0], tg, o.get("ignore_index", -100), e, w,
                                                               o.get("mean", True)), [x], args)

CE_ND_CASES = [  # name, logits shape [N, C, d...], targets [N, d...] flat, options
    ("ce_3d", [2, 4, 3], [0, 3, 1, 2, 2, 0], {}),
    ("ce_4d_ignore_smoothing", [2, 3, 2, 2], [0, 2, -100, 1, 1, -100, 0, 2], {"label_smoothing": 0.1}),
    ("ce_4d_weights_sum", [2, 3, 2, 2], [0, 2, 1, 1, 1, 0, 0, 2],
     {"row_weights": [[[1, 0.5], [0, 2]], [[1, 1], [0.25, 1]]], "mean": False}),
    ("ce_3d_ignore_valid_class", [3, 5, 2], [4, 1, 1, 0, 3, 1], {"ignore_index": 1}),
]
for name, shape, targets, opts in CE_ND_CASES:
    start(name)
    x = randn(*shape, scale=1.5)
    tshape = shape[:1] + shape[2:]
    weights = opts.get("row_weights")
    wt = None if weights is None else torch.tensor(weights, dtype=torch.float32)
    eps = f32(opts.get("label_smoothing", 0.0))
    args = {"targets": ints(tshape, targets), "ignore_index": opts.get("ignore_index", -100),
            "label_smoothing": opts.get("label_smoothing", 0.0), "mean": opts.get("mean", True)}
    if wt is not None:
        args["row_weights"] = t(wt)
    case(name, "cross_entropy",
         lambda v, tg=targets, o=opts, w=wt, e=eps: cross_entropy(v[0], tg, o.get("ignore_index", -100), e, w,
                                                               o.get("mean", True)), [x], args)


# ---- losses ----
REDUCTIONS = ("mean", "sum", "none")
for op, fn, draw_t in (("mse_loss", F.mse_loss, None), ("l1_loss", F.l1_loss, None)):
    for reduction in REDUCTIONS:
        for shape in ([3, 5], [2, 3, 4]):
            name = f"{op}_{reduction}_{len(shape)}d"
            start(name)
            x, y = randn(*shape), randn(*shape)
            if op == "l1_loss":  # keep x - t >= 0.02 from the kink at 0
                y = x - away_from(x - y, [0.0])
            case(name, op, lambda v, fn=fn, r=reduction: fn(v[0], v[1], reduction=r), [x, y], {"reduction": reduction})
start("l1_loss_at_zero")  # d|x - t|/dx = 0 where x = t, as torch's sign
x = torch.tensor([0.5, -1.0, 2.0, 0.25])
y = torch.tensor([0.5, 0.0, 2.0, -0.25])
case("l1_loss_at_zero", "l1_loss", lambda v: F.l1_loss(v[0], v[1], reduction="sum"), [x, y], {"reduction": "sum"})
for delta in (1.0, 0.5, 2.0):
    for reduction in REDUCTIONS:
        name = f"huber_loss_{delta}_{reduction}"
        start(name)
        x, y = randn(3, 5, scale=1.5), randn(3, 5, scale=1.5)
        y = x - away_from(x - y, [f32(-delta), f32(delta)])  # keep |x - t| >= 0.02 from delta
        case(name, "huber_loss", lambda v, r=reduction, d=delta: F.huber_loss(v[0], v[1], reduction=r, delta=f32(d)),
             [x, y], {"reduction": reduction, "delta": delta})
for name, shape, targets, ignore, reduction in (
        ("nll_loss_mean", [5, 7], [3, 0, 6, 3, 1], -100, "mean"),
        ("nll_loss_sum_ignore", [5, 7], [3, -100, 6, 3, -100], -100, "sum"),
        ("nll_loss_none_ignore_valid_class", [6, 4], [2, 0, 2, 3, 1, 2], 2, "none"),
        ("nll_loss_3d_mean_ignore", [2, 4, 3], [0, 3, -100, 2, 2, 0], -100, "mean"),
        ("nll_loss_4d_none", [2, 3, 2, 2], [0, 2, 1, 1, 1, 0, 0, 2], -100, "none")):
    start(name)
    x = torch.log_softmax(randn(*shape, scale=1.5), 1)
    tshape = shape[:1] + shape[2:]
    case(name, "nll_loss",
         lambda v, tg=torch.tensor(targets).reshape(tshape), i=ignore, r=reduction:
         F.nll_loss(v[0], tg, ignore_index=i, reduction=r), [x],
         {"targets": ints(tshape, targets), "ignore_index": ignore, "reduction": reduction})
for name, shape, hard, pw_shape, reduction in (
        ("bce_logits_mean", [4, 5], False, None, "mean"), ("bce_logits_hard_sum", [4, 5], True, None, "sum"),
        ("bce_logits_none_3d", [2, 3, 4], False, None, "none"),
        ("bce_logits_pos_weight_classes", [4, 5], True, [5], "mean"),
        ("bce_logits_pos_weight_full_none", [3, 4], False, [3, 4], "none"),
        ("bce_logits_pos_weight_mid_sum", [2, 3, 4], False, [3, 1], "sum"),
        ("bce_logits_large", [3, 4], True, [4], "sum")):
    start(name)
    x = randn(*shape, scale=3.0)
    if name == "bce_logits_large":  # +-60: exp(60) overflows float32, so only the stable form survives
        x = x + torch.where(randn(*shape) < 0, -60.0, 60.0)
    y = (uniform(0, 1, *shape) < 0.5).to(torch.float32) if hard else uniform(0, 1, *shape)
    pw = None if pw_shape is None else uniform(0.25, 4.0, *pw_shape)
    args = {"reduction": reduction}
    if pw is not None:
        args["pos_weight"] = t(pw)
    case(name, "binary_cross_entropy_with_logits",
         lambda v, p=pw, r=reduction: F.binary_cross_entropy_with_logits(
             v[0], v[1], reduction=r, pos_weight=None if p is None else p.to(torch.float64)), [x, y], args)

# ---- masks ----
for name, shape, mshape, value in (("masked_fill_same", [3, 5], [3, 5], -1e9), ("masked_fill_row", [3, 5], [5], 0.5),
                                   ("masked_fill_mid", [2, 3, 4], [2, 1, 4], -2.0)):
    start(name)
    x = randn(*shape)
    mask = (torch.rand(*mshape, generator=gen) < 0.4).to(torch.float32)
    if name == "masked_fill_same":
        mask[0, 0], mask[1, 2] = 2.0, -1.0  # any non-zero value masks
    case(name, "masked_fill", lambda v, m=mask, val=value: v[0].masked_fill(m != 0, val), [x],
         {"mask": t(mask), "value": value})
for name, shape, cshape in (("where_same", [3, 5], [3, 5]), ("where_row", [3, 5], [1, 5]),
                            ("where_col", [2, 3, 4], [3, 1])):
    start(name)
    a, b = randn(*shape), randn(*shape)
    cond = (torch.rand(*cshape, generator=gen) < 0.5).to(torch.float32)
    if name == "where_same":
        cond[0, 1], cond[2, 3] = 0.5, -3.0
    case(name, "where", lambda v, c=cond: torch.where(c != 0, v[0], v[1]), [a, b], {"cond": t(cond)})

missing = set(OPS) - {c["op"] for c in cases}
assert not missing, f"ops without a case: {sorted(missing)}"
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops.json")
with open(path, "w") as f:
    f.write('{"ops": ' + json.dumps(OPS) + ',\n"cases": [\n')
    f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in cases))
    f.write("\n]}\n")
print(f"wrote {len(cases)} cases ({os.path.getsize(path)} bytes) to {path}")
