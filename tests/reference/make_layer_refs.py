"""Reference values for Linear, weight-normed Linear, Embedding and Flatten (tests/test_layers_basic.cpp).

Run with the pip torch:  /tmp/torchenv/bin/python tests/reference/make_layer_refs.py
Writes tests/reference/layers_basic.json. Each case holds the inputs and the
parameters (in our layout: weight [out, in], weight_g [out]), the output, a
projection r, and the gradients of sum(output * r) with respect to the input
(Linear) and every parameter.

Inputs and parameters are drawn in float32 and the layers are then run in
float64 by torch's own modules (nn.Linear, nn.utils.weight_norm, nn.Embedding),
so the references are exact to ~1e-15 and the C++ test's tolerance measures
only its own float32 rounding.

The "flatten" cases are torch.nn.Flatten(start_dim, end_dim) on x: its output
(shape and values) and the gradient of sum(output * r), r in the output's shape.

The "wn_init" case is Salimans & Kingma's data-dependent init: for a batch x
and direction v, t = x v̂ᵀ, g = 1/sqrt(var(t) + 1e-10), b = -mean(t)·g (biased
variance over the batch), and the layer's output after that init.
"""
import json
import os
import zlib

import torch

torch.set_default_dtype(torch.float64)


def t(x):
    return {"shape": list(x.shape), "data": [float(f"{v:.9g}") for v in x.detach().reshape(-1).tolist()]}


def draw(gen, *shape, scale=1.0, shift=0.0):
    """float32 values scale·N(0, 1) + shift (so the C++ side holds them exactly), as float64."""
    return (scale * torch.randn(*shape, generator=gen, dtype=torch.float32) + shift).double()


def gen_for(name):
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


def linear_case(name, x_shape, out, bias, weight_norm):
    gen = gen_for(name)
    inp = x_shape[-1]
    layer = torch.nn.Linear(inp, out, bias=bias)
    with torch.no_grad():
        layer.weight.copy_(draw(gen, out, inp, scale=0.5))
        if bias:
            layer.bias.copy_(draw(gen, out, scale=0.1))
    if weight_norm:
        layer = torch.nn.utils.weight_norm(layer, name="weight", dim=0)
        with torch.no_grad():  # a g different from ‖v‖, so g's gradient matters
            layer.weight_g.copy_(draw(gen, out, scale=0.3, shift=1.0).unsqueeze(1))
    x = draw(gen, *x_shape).requires_grad_()
    y = layer(x)
    r = draw(gen, *y.shape)
    (y * r).sum().backward()
    names = ["weight_v", "weight_g"] if weight_norm else ["weight"]
    if bias:
        names.append("bias")
    params = dict(layer.named_parameters())
    assert sorted(params) == sorted(names), (name, list(params))
    flat = lambda n, v: v.reshape(-1) if n == "weight_g" else v  # torch keeps g as [out, 1]
    return {
        "name": name, "kind": "linear", "in": inp, "out": out, "bias": bias, "weight_norm": weight_norm,
        "x": t(x), "params": {n: t(flat(n, params[n])) for n in names},
        "output": t(y), "projection": t(r), "grad_x": t(x.grad),
        "grad_params": {n: t(flat(n, params[n].grad)) for n in names},
    }


def embedding_case(name, vocab, dim, ids):
    gen = gen_for(name)
    layer = torch.nn.Embedding(vocab, dim)
    with torch.no_grad():
        layer.weight.copy_(draw(gen, vocab, dim))
    ids = torch.tensor(ids)
    y = layer(ids)
    r = draw(gen, *y.shape)
    (y * r).sum().backward()
    return {
        "name": name, "kind": "embedding", "vocab": vocab, "dim": dim,
        "ids": {"shape": list(ids.shape), "data": ids.reshape(-1).tolist()},
        "params": {"weight": t(layer.weight)}, "output": t(y), "projection": t(r),
        "grad_params": {"weight": t(layer.weight.grad)},
    }


def init_case(name, rows, inp, out):
    gen = gen_for(name)
    x = draw(gen, rows, inp, scale=2.0, shift=0.5)  # off-centre, not unit scale: the init has work to do
    v = draw(gen, out, inp, scale=0.05)        # Salimans' code draws v from N(0, 0.05²)
    v_hat = v / v.norm(dim=1, keepdim=True)
    pre = x @ v_hat.T
    mean, var = pre.mean(0), pre.var(0, unbiased=False)
    g = 1.0 / torch.sqrt(var + 1e-10)
    b = -mean * g
    layer = torch.nn.utils.weight_norm(torch.nn.Linear(inp, out), name="weight", dim=0)
    with torch.no_grad():
        layer.weight_v.copy_(v)
        layer.weight_g.copy_(g.unsqueeze(1))
        layer.bias.copy_(b)
        y = layer(x)
    assert torch.allclose(y.mean(0), torch.zeros(out), atol=1e-9)
    assert torch.allclose(y.var(0, unbiased=False), torch.ones(out), atol=1e-9)
    return {"name": name, "kind": "wn_init", "in": inp, "out": out, "x": t(x), "weight_v": t(v),
            "weight_g": t(g), "bias": t(b), "output": t(y)}


def flatten_case(name, x_shape, start, end):
    gen = gen_for(name)
    x = draw(gen, *x_shape).requires_grad_()
    y = torch.nn.Flatten(start, end)(x)
    r = draw(gen, *y.shape)
    (y * r).sum().backward()
    return {"name": name, "kind": "flatten", "start": start, "end": end, "x": t(x), "output": t(y),
            "projection": t(r), "grad_x": t(x.grad)}


cases = [
    linear_case("linear_bias", (4, 5), 3, bias=True, weight_norm=False),
    linear_case("linear_nobias_odd", (3, 7), 9, bias=False, weight_norm=False),
    linear_case("linear_3d", (2, 3, 6), 5, bias=True, weight_norm=False),
    linear_case("wn_linear", (5, 6), 4, bias=True, weight_norm=True),
    linear_case("wn_linear_3d_nobias_odd", (2, 3, 7), 5, bias=False, weight_norm=True),
    embedding_case("embedding", 11, 6, [[3, 0, 10, 3], [7, 3, 1, 0], [10, 10, 2, 5]]),
    init_case("wn_init", 64, 10, 6),
    flatten_case("flatten_default", (2, 3, 2, 2), 1, -1),
    flatten_case("flatten_all", (2, 3, 2, 2), 0, -1),
    flatten_case("flatten_middle", (2, 3, 2, 2), 1, 2),
    flatten_case("flatten_negative", (2, 3, 4), -2, -1),
    flatten_case("flatten_one_axis", (2, 3, 2, 2), 2, 2),
    flatten_case("flatten_rank2", (4, 5), 1, -1),
]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers_basic.json")
with open(path, "w") as f:
    json.dump({"cases": cases}, f)
print(f"wrote {len(cases)} cases to {path} ({os.path.getsize(path)} bytes)")
