"""Reference values for conv2d, conv1d, max_pool2d, avg_pool2d, global_avg_pool,
the weight-normed Conv2d and Conv1d, and Conv1d's initial values (tests/test_conv.cpp).

Run with the pip torch:  /tmp/torchenv/bin/python tests/reference/make_conv_refs.py
Writes tests/reference/conv.json. Each case holds the input, the parameters in
our layout (weight [O, C, k, k] or [O, C, k], weight_g [O]), the output, a
projection r and the gradients of sum(output * r) with respect to the input and
every parameter. Values are drawn in float32 and computed in float64 by
torch.nn.functional, so the C++ tolerance measures only its own float32 rounding.

"conv1d_init" holds what torch.nn.Conv1d's reset_parameters draws from: the
bound of kaiming_uniform_(a=√5) on the weight and of the bias's uniform, both
1/√fan_in, computed by torch.nn.init's own fan and gain functions.
"""
import math
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


def conv_case(name, n, c, h, w, o, k, stride, padding, bias, weight_norm=False, kind="conv2d"):
    """kind conv2d: x [n, c, h, w], weight [o, c, k, k]; conv1d: x [n, c, w], weight [o, c, k] (h unused)."""
    gen = gen_for(name)
    x_shape, w_shape = ((n, c, h, w), (o, c, k, k)) if kind == "conv2d" else ((n, c, w), (o, c, k))
    x = draw(gen, *x_shape).requires_grad_()
    params = {}
    if weight_norm:
        v = draw(gen, *w_shape, scale=0.5).requires_grad_()
        g = draw(gen, o, scale=0.3, shift=1.0).requires_grad_()
        weight = torch._weight_norm(v, g.reshape(o, *[1] * (len(w_shape) - 1)), 0)
        params = {"weight_v": v, "weight_g": g}
    else:
        weight = draw(gen, *w_shape, scale=0.5).requires_grad_()
        params = {"weight": weight}
    b = None
    if bias:
        b = draw(gen, o, scale=0.1).requires_grad_()
        params["bias"] = b
    conv = F.conv2d if kind == "conv2d" else F.conv1d
    y = conv(x, weight, b, stride=stride, padding=padding)
    r = draw(gen, *y.shape)
    (y * r).sum().backward()
    return {"name": name, "kind": kind, "stride": stride, "padding": padding, "weight_norm": weight_norm,
            "x": t(x), "params": {k_: t(p) for k_, p in params.items()}, "output": t(y), "projection": t(r),
            "grad_x": t(x.grad), "grad_params": {k_: t(p.grad) for k_, p in params.items()}}


def pool_case(name, kind, shape, kernel=2, stride=2, padding=0):
    gen = gen_for(name)
    # A permutation of distinct values keeps every window's maximum unique.
    numel = 1
    for d in shape:
        numel *= d
    x = (torch.randperm(numel, generator=gen).double() / numel - 0.5).reshape(shape).requires_grad_()
    if kind == "max_pool2d":
        y = F.max_pool2d(x, kernel, stride)
    elif kind == "avg_pool2d":  # torch's defaults: ceil_mode=False, count_include_pad=True
        y = F.avg_pool2d(x, kernel, stride, padding)
    else:
        y = x.mean(dim=(2, 3))
    r = draw(gen, *y.shape)
    (y * r).sum().backward()
    case = {"name": name, "kind": kind, "kernel": kernel, "stride": stride, "x": t(x), "params": {},
            "output": t(y), "projection": t(r), "grad_x": t(x.grad), "grad_params": {}}
    if kind == "avg_pool2d":
        case["padding"] = padding
    return case


def conv1d_init(c, o, k):
    layer = torch.nn.Conv1d(c, o, k)
    fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(layer.weight)
    gain = torch.nn.init.calculate_gain("leaky_relu", math.sqrt(5))  # reset_parameters' a = √5
    weight_bound = math.sqrt(3.0) * gain / math.sqrt(fan_in)
    bias_bound = 1 / math.sqrt(fan_in)
    assert layer.weight.abs().max() <= weight_bound and layer.bias.abs().max() <= bias_bound
    return {"in": c, "out": o, "kernel": k, "weight_bound": weight_bound, "bias_bound": bias_bound}


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
    conv_case("conv1d_k3_pad1_bias", 2, 3, 1, 9, 4, 3, 1, 1, True, kind="conv1d"),
    conv_case("conv1d_k5_stride2", 3, 2, 1, 11, 5, 5, 2, 0, False, kind="conv1d"),
    conv_case("conv1d_k1", 2, 4, 1, 7, 3, 1, 1, 0, True, kind="conv1d"),
    conv_case("conv1d_k4_stride3_pad2", 2, 3, 1, 10, 2, 4, 3, 2, True, kind="conv1d"),
    conv_case("wn_conv1d_k3", 2, 3, 1, 8, 4, 3, 1, 1, True, weight_norm=True, kind="conv1d"),
    pool_case("avgpool_2x2", "avg_pool2d", (2, 3, 6, 4)),
    pool_case("avgpool_3s1_overlap", "avg_pool2d", (1, 2, 5, 6), kernel=3, stride=1),
    pool_case("avgpool_3s2_pad1", "avg_pool2d", (2, 2, 7, 5), kernel=3, stride=2, padding=1),
    pool_case("avgpool_4s3_pad2", "avg_pool2d", (2, 1, 9, 8), kernel=4, stride=3, padding=2),
]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conv.json")
with open(path, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases, "conv1d_init": conv1d_init(64, 128, 5)}, f)
print(f"wrote {len(cases)} cases to {path} ({os.path.getsize(path)} bytes)")
