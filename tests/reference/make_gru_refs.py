"""Reference values for the GRU cell and layer (tests/test_gru.cpp).

Run with Debian's python3-torch:  /usr/bin/python3 tests/reference/make_gru_refs.py
Writes tests/reference/gru.json: for each case the parameters (in our layout),
the inputs, the output, a projection r, and the gradients of sum(output * r)
with respect to the input, the initial state and every parameter.

The plain GRU is torch.nn.GRUCell with our weights: W_ih = [W_x_gates; W_x_cand]
(row blocks r, z, n), b_ih = [b_gates; b_cand], W_hh = [W_h_gates; W_h_cand],
b_hh = 0; torch's z is our update gate u. The normalized GRUs are written here
from the paper's equations, with torch's layer_norm and a composed RMSNorm.
"""
import json
import os
import zlib

import torch
import torch.nn.functional as F

torch.manual_seed(0)
EPS = 1e-5


def t(x):
    return {"shape": list(x.shape), "data": [float(f"{v:.9g}") for v in x.detach().reshape(-1).tolist()]}


def rms(x, g, k=None):
    head = x if k is None else x[..., :k]
    return x * torch.rsqrt(head.pow(2).mean(-1, keepdim=True) + EPS) * g


def make_norm(kind, n, gen):
    """Returns (apply, params) with random gain (and bias) near 1 (0)."""
    if kind == "none":
        return (lambda x: x), {}
    g = (1 + 0.2 * torch.randn(n, generator=gen)).requires_grad_()
    if kind == "layernorm":
        b = (0.1 * torch.randn(n, generator=gen)).requires_grad_()
        return (lambda x: F.layer_norm(x, (n,), g, b, EPS)), {"gain": g, "bias": b}
    if kind == "rmsnorm":
        return (lambda x: rms(x, g)), {"gain": g}
    if kind == "prmsnorm":
        k = max(1, int(n * 0.0625))
        return (lambda x: rms(x, g, k)), {"gain": g}
    raise ValueError(kind)


def case(name, kind, steps, batch, inp, hid, mask_rows=None):
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    p = {
        "weight_x_gates": 0.3 * torch.randn(2 * hid, inp, generator=gen),
        "bias_gates": 0.1 * torch.randn(2 * hid, generator=gen),
        "weight_x_cand": 0.3 * torch.randn(hid, inp, generator=gen),
        "bias_cand": 0.1 * torch.randn(hid, generator=gen),
        "weight_h_gates": 0.3 * torch.randn(2 * hid, hid, generator=gen),
        "weight_h_cand": 0.3 * torch.randn(hid, hid, generator=gen),
    }
    for v in p.values():
        v.requires_grad_()
    norms = {}
    for group, n in (("norm_x_gates", 2 * hid), ("norm_x_cand", hid), ("norm_h_gates", 2 * hid),
                     ("norm_h_cand", hid)):
        fn, params = make_norm(kind, n, gen)
        norms[group] = fn
        for pname, v in params.items():
            p[f"{group}.{pname}"] = v
    x = torch.randn(steps, batch, inp, generator=gen, requires_grad=True)
    h0 = (0.5 * torch.randn(batch, hid, generator=gen)).requires_grad_()
    mask = torch.ones(steps, batch)
    if mask_rows:
        for b, length in mask_rows.items():
            mask[length:, b] = 0

    h = h0
    outs = []
    for s in range(steps):
        xs = x[s]
        xg = norms["norm_x_gates"](xs @ p["weight_x_gates"].T + p["bias_gates"])
        xc = norms["norm_x_cand"](xs @ p["weight_x_cand"].T + p["bias_cand"])
        hg = norms["norm_h_gates"](h @ p["weight_h_gates"].T)
        hc = norms["norm_h_cand"](h @ p["weight_h_cand"].T)
        r = torch.sigmoid(xg[:, :hid] + hg[:, :hid])
        u = torch.sigmoid(xg[:, hid:] + hg[:, hid:])
        c = torch.tanh(xc + r * hc)
        new = u * h + (1 - u) * c
        m = mask[s].unsqueeze(1)
        h = m * new + (1 - m) * h
        outs.append(h)
    out = torch.stack(outs)

    if kind == "none" and not mask_rows:  # the same numbers from torch's own cell
        cell = torch.nn.GRUCell(inp, hid)
        with torch.no_grad():
            cell.weight_ih.copy_(torch.cat([p["weight_x_gates"], p["weight_x_cand"]]))
            cell.bias_ih.copy_(torch.cat([p["bias_gates"], p["bias_cand"]]))
            cell.weight_hh.copy_(torch.cat([p["weight_h_gates"], p["weight_h_cand"]]))
            cell.bias_hh.zero_()
            hh, ref = h0, []
            for s in range(steps):
                hh = cell(x[s], hh)
                ref.append(hh)
            assert torch.allclose(torch.stack(ref), out, atol=1e-6), name

    proj = torch.randn(out.shape, generator=gen)
    (out * proj).sum().backward()
    return {
        "name": name, "norm": kind, "mask": t(mask), "x": t(x), "h0": t(h0),
        "params": {k: t(v) for k, v in p.items()},
        "output": t(out), "projection": t(proj),
        "grad_x": t(x.grad), "grad_h0": t(h0.grad),
        "grad_params": {k: t(v.grad) for k, v in p.items()},
    }


def gru_params(prefix, inp, hid, kind, gen, p, norms):
    for name, shape in (("weight_x_gates", (2 * hid, inp)), ("bias_gates", (2 * hid,)),
                        ("weight_x_cand", (hid, inp)), ("bias_cand", (hid,)),
                        ("weight_h_gates", (2 * hid, hid)), ("weight_h_cand", (hid, hid))):
        p[prefix + name] = (0.3 * torch.randn(*shape, generator=gen)).requires_grad_()
    for group, n in (("norm_x_gates", 2 * hid), ("norm_x_cand", hid), ("norm_h_gates", 2 * hid),
                     ("norm_h_cand", hid)):
        fn, params = make_norm(kind, n, gen)
        norms[prefix + group] = fn
        for pname, v in params.items():
            p[f"{prefix}{group}.{pname}"] = v


def gru_step(prefix, p, norms, x, h, m, hid):
    xg = norms[prefix + "norm_x_gates"](x @ p[prefix + "weight_x_gates"].T + p[prefix + "bias_gates"])
    xc = norms[prefix + "norm_x_cand"](x @ p[prefix + "weight_x_cand"].T + p[prefix + "bias_cand"])
    hg = norms[prefix + "norm_h_gates"](h @ p[prefix + "weight_h_gates"].T)
    hc = norms[prefix + "norm_h_cand"](h @ p[prefix + "weight_h_cand"].T)
    r = torch.sigmoid(xg[:, :hid] + hg[:, :hid])
    u = torch.sigmoid(xg[:, hid:] + hg[:, hid:])
    c = torch.tanh(xc + r * hc)
    m = m.unsqueeze(1)
    return m * (u * h + (1 - u) * c) + (1 - m) * h


def cgru_case(name, kind, steps, src, batch, emb, hid, ctx_size, att, src_lengths):
    """Nematus' conditional GRU: s' = GRU1(y, s); c = MLP attention(s', C); s = GRU2(c, s')."""
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    p, norms = {}, {}
    gru_params("gru1.", emb, hid, kind, gen, p, norms)
    p["attention.context_to_hidden.weight"] = 0.3 * torch.randn(att, ctx_size, generator=gen)
    p["attention.context_to_hidden.bias"] = 0.1 * torch.randn(att, generator=gen)
    p["attention.state_to_hidden.weight"] = 0.3 * torch.randn(att, hid, generator=gen)
    p["attention.hidden_to_score.weight"] = 0.3 * torch.randn(1, att, generator=gen)
    p["attention.hidden_to_score.bias"] = 0.1 * torch.randn(1, generator=gen)
    for k in list(p):
        if k.startswith("attention."):
            p[k].requires_grad_()
    for group in ("norm_context", "norm_state"):
        fn, params = make_norm(kind, att, gen)
        norms["attention." + group] = fn
        for pname, v in params.items():
            p[f"attention.{group}.{pname}"] = v
    gru_params("gru2.", ctx_size, hid, kind, gen, p, norms)

    y = torch.randn(steps, batch, emb, generator=gen, requires_grad=True)
    ctx = torch.randn(src, batch, ctx_size, generator=gen, requires_grad=True)
    s0 = (0.5 * torch.randn(batch, hid, generator=gen)).requires_grad_()
    src_mask = torch.zeros(src, batch)
    for b, length in enumerate(src_lengths):
        src_mask[:length, b] = 1
    tgt_mask = torch.ones(steps, batch)
    tgt_mask[steps - 1, 0] = 0
    projected = norms["attention.norm_context"](ctx @ p["attention.context_to_hidden.weight"].T
                                                + p["attention.context_to_hidden.bias"])
    s, outs = s0, []
    for step in range(steps):
        s1 = gru_step("gru1.", p, norms, y[step], s, tgt_mask[step], hid)
        q = norms["attention.norm_state"](s1 @ p["attention.state_to_hidden.weight"].T)
        scores = (torch.tanh(projected + q) @ p["attention.hidden_to_score.weight"].T).squeeze(-1) \
            + p["attention.hidden_to_score.bias"]
        scores = scores.masked_fill(src_mask == 0, -1e30)
        alpha = torch.softmax(scores, 0)
        c = (alpha.unsqueeze(-1) * ctx).sum(0)
        s = gru_step("gru2.", p, norms, c, s1, tgt_mask[step], hid)
        outs.append(torch.cat([s, c], 1))
    out = torch.stack(outs)
    proj = torch.randn(out.shape, generator=gen)
    (out * proj).sum().backward()
    return {
        "name": name, "norm": kind, "source_mask": t(src_mask), "target_mask": t(tgt_mask),
        "y": t(y), "context": t(ctx), "s0": t(s0), "attention_size": att,
        "params": {k: t(v) for k, v in p.items()},
        "output": t(out), "projection": t(proj),
        "grad_y": t(y.grad), "grad_context": t(ctx.grad), "grad_s0": t(s0.grad),
        "grad_params": {k: t(v.grad) for k, v in p.items()},
    }


cases = [
    case("plain", "none", 3, 2, 5, 4),
    case("plain_masked", "none", 4, 3, 5, 7, {1: 2, 2: 3}),
    case("layernorm", "layernorm", 3, 3, 5, 7, {0: 2}),
    case("rmsnorm", "rmsnorm", 3, 3, 5, 7, {2: 1}),
    case("prmsnorm_wide", "prmsnorm", 2, 2, 6, 33),
]
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gru.json")
cgru_cases = [
    cgru_case("cgru_plain", "none", 3, 4, 2, 5, 6, 8, 7, [4, 2]),
    cgru_case("cgru_layernorm", "layernorm", 3, 5, 3, 4, 5, 6, 7, [5, 3, 1]),
    cgru_case("cgru_rmsnorm", "rmsnorm", 3, 5, 2, 4, 5, 6, 9, [2, 5]),
]
with open(path, "w") as f:
    json.dump({"eps": EPS, "cases": cases, "cgru_cases": cgru_cases}, f)
print(f"wrote {len(cases)} cases to {path}")
