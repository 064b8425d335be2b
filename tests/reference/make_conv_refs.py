"""Reference values for conv2d, max_pool2d, global_avg_pool and the weight-normed
Conv2d (tests/test_conv.cpp).

Run with Debian's python3-torch:  /usr/bin/python3 tests/reference/make_conv_refs.py
Writes tests/reference/conv.json. Each case holds the input, the parameters in
our layout (weight [O, C, k, k], weight_g [O]), the output, a projection r and
the gradients of sum(output * r) with respect to the input and every parameter.
Values are drawn in float32 and computed in float64 by torch.nn.functional, so
the C++ tolerance measures only its own float32 rounding.
"""
import json
import os
import zlib

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def t(x):
    return {"shape": list(x.shape), "data": [float(f"{v:.9g}") for v in x.detach().reshape(-1).tolist()]}


def draw(gen, *shape, scale=1.0, shift=0.0):
    return (scale * torch.randn(*shape, generator=gen, dtype=torch.float32) + shift).double()


def gen_for(name):
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


def conv_case(name, n, c, h, w, o, k, stride, padding, bias, weight_norm=False):
    gen = gen_for(name)
    x = draw(gen, n, c, h, w).requires_grad_()
    params = {}
    if weight_norm:
        v = draw(gen, o, c, k, k, scale=0.5).requires_grad_()
        g = draw(gen, o, scale=0.3, shift=1.0).requires_grad_()
        weight = torch._weight_norm(v, g.reshape(o, 1, 1, 1), 0)
        params = {"weight_v": v, "weight_g": g}
    else:
        weight = draw(gen, o, c, k, k, scale=0.5).requires_grad_()
        params = {"weight": weight}
    b = None
    if bias:
        b = draw(gen, o, scale=0.1).requires_grad_()
        params["bias"] = b
    y = F.conv2d(x, weight, b, stride=stride, padding=padding)
    r = draw(gen, *y.shape)
    (y * r).sum().backward()
    return {"name": name, "kind": "conv2d", "stride": stride, "padding": padding, "weight_norm": weight_norm,
            "x": t(x), "params": {k_: t(p) for k_, p in params.items()}, "output": t(y), "projection": t(r),
            "grad_x": t(x.grad), "grad_params": {k_: t(p.grad) for k_, p in params.items()}}


def pool_case(name, kind, shape, kernel=2, stride=2):
    gen = gen_for(name)
    # A permutation of distinct values keeps every window's maximum unique.
    numel = 1
    for d in shape:
        numel *= d
    x = (torch.randperm(numel, generator=gen).double() / numel - 0.5).reshape(shape).requires_grad_()
    y = F.max_pool2d(x, kernel, stride) if kind == "max_pool2d" else x.mean(dim=(2, 3))
    r = draw(gen, *y.shape)
    (y * r).sum().backward()
    return {"name": name, "kind": kind, "kernel": kernel, "stride": stride, "x": t(x), "params": {},
            "output": t(y), "projection": t(r), "grad_x": t(x.grad), "grad_params": {}}


cases = [
    conv_case("conv3x3_pad1_bias", 2, 3, 6, 5, 4, 3, 1, 1, True),
    conv_case("conv3x3_nopad_odd", 3, 5, 7, 7, 6, 3, 1, 0, False),
    conv_case("conv3x3_stride2_pad1", 2, 2, 7, 6, 3, 3, 2, 1, True),
    conv_case("conv1x1", 2, 5, 4, 3, 7, 1, 1, 0, True),
    conv_case("conv1x1_stride2", 2, 3, 5, 5, 2, 1, 2, 0, False),
    conv_case("wn_conv3x3", 2, 3, 5, 5, 4, 3, 1, 1, True, weight_norm=True),
    pool_case("maxpool_2x2", "max_pool2d", (2, 3, 6, 4)),
    pool_case("maxpool_odd_3s2", "max_pool2d", (2, 2, 7, 5), kernel=3, stride=2),
    pool_case("global_avg", "global_avg_pool", (3, 4, 5, 3)),
]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv.json")
with open(path, "w") as f:
    json.dump({"cases": cases}, f)
print(f"wrote {len(cases)} cases to {path} ({os.path.getsize(path)} bytes)")
