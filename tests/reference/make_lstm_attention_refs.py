"""Reference values for the LSTM and the attention layers (tests/test_lstm.cpp, tests/test_attention.cpp).

Run with Debian's python3-torch:  /usr/bin/python3 tests/reference/make_lstm_attention_refs.py
Writes tests/reference/lstm_attention.json. Every case stores the inputs, the
parameters under our dotted names, the outputs, one random projection per
output, and the gradients of sum(output * projection) (summed over outputs)
with respect to every input and parameter.

LSTM (gate order i, f, g, o, as torch): the plain cell is torch.nn.LSTMCell
with b_ih = our bias, b_hh = 0. The normalized cells are written here from the
paper's equations:  a = norm_x(x W_xᵀ + b) + norm_h(h W_hᵀ),  c' = f c + i g,
h' = o tanh(norm_c(c')), c' carried; padded steps (mask 0) carry h and c.

MLP attention (Bahdanau, as in Nematus): e = v·tanh(norm_context(W_c ctx + b_c)
+ norm_state(W_s s)) + b_v, α = softmax over the real source positions,
context = Σ α ctx. Multi-head attention is torch.nn.MultiheadAttention with
our q/k/v/out projections and a key padding mask (and a causal mask).
"""
import json
import os
import zlib

import torch
import torch.nn.functional as F

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


def add_norms(p, norms, groups, kind, gen):
    for group, n in groups:
        fn, params = make_norm(kind, n, gen)
        norms[group] = fn
        for pname, v in params.items():
            p[f"{group}.{pname}"] = v


def length_mask(steps, batch, lengths):
    mask = torch.ones(steps, batch)
    for b, length in enumerate(lengths):
        mask[length:, b] = 0
    return mask


def finish(name, kind, inputs, params, outputs, gen, extra=None):
    """Projects the outputs, backpropagates, and packs one case."""
    projections = {k: torch.randn(v.shape, generator=gen) for k, v in outputs.items()}
    sum((v * projections[k]).sum() for k, v in outputs.items()).backward()
    case = {
        "name": name, "norm": kind,
        "inputs": {k: t(v) for k, v in inputs.items()},
        "params": {k: t(v) for k, v in params.items()},
        "outputs": {k: t(v) for k, v in outputs.items()},
        "projections": {k: t(v) for k, v in projections.items()},
        "grad_inputs": {k: t(v.grad) for k, v in inputs.items() if v.requires_grad},
        # Cases run through a torch module fill in its gradients afterwards.
        "grad_params": {k: t(v.grad) for k, v in params.items() if v.grad is not None},
    }
    case.update(extra or {})
    return case


def lstm_params(inp, hid, gen):
    p = {
        "weight_x": 0.3 * torch.randn(4 * hid, inp, generator=gen),
        "bias": 0.1 * torch.randn(4 * hid, generator=gen),
        "weight_h": 0.3 * torch.randn(4 * hid, hid, generator=gen),
    }
    for v in p.values():
        v.requires_grad_()
    return p


def lstm_step(p, norms, x, h, c, m=None):
    a = norms["norm_x"](x @ p["weight_x"].T + p["bias"]) + norms["norm_h"](h @ p["weight_h"].T)
    i, f, g, o = a.chunk(4, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_new = torch.sigmoid(o) * torch.tanh(norms["norm_c"](c_new))
    if m is None:
        return h_new, c_new
    m = m.unsqueeze(1)
    return m * h_new + (1 - m) * h, m * c_new + (1 - m) * c


def lstm_cell_case(name, batch, inp, hid):
    """One step of the plain cell, straight from torch.nn.LSTMCell."""
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    p = lstm_params(inp, hid, gen)
    x = torch.randn(batch, inp, generator=gen, requires_grad=True)
    h0 = (0.5 * torch.randn(batch, hid, generator=gen)).requires_grad_()
    c0 = (0.5 * torch.randn(batch, hid, generator=gen)).requires_grad_()
    cell = torch.nn.LSTMCell(inp, hid)
    with torch.no_grad():
        cell.weight_ih.copy_(p["weight_x"])
        cell.bias_ih.copy_(p["bias"])
        cell.weight_hh.copy_(p["weight_h"])
        cell.bias_hh.zero_()
    h, c = cell(x, (h0, c0))
    case = finish(name, "none", {"x": x, "h0": h0, "c0": c0}, p, {"h": h, "c": c}, gen)
    # Our parameters are copies; the gradients are the torch cell's.
    case["grad_params"] = {"weight_x": t(cell.weight_ih.grad), "bias": t(cell.bias_ih.grad),
                           "weight_h": t(cell.weight_hh.grad)}
    return case


def lstm_layer_case(name, kind, steps, batch, inp, hid, lengths, reverse=False):
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    p = lstm_params(inp, hid, gen)
    norms = {}
    add_norms(p, norms, (("norm_x", 4 * hid), ("norm_h", 4 * hid), ("norm_c", hid)), kind, gen)
    x = torch.randn(steps, batch, inp, generator=gen, requires_grad=True)
    h0 = (0.5 * torch.randn(batch, hid, generator=gen)).requires_grad_()
    c0 = (0.5 * torch.randn(batch, hid, generator=gen)).requires_grad_()
    mask = length_mask(steps, batch, lengths)
    h, c = h0, c0
    states = [None] * steps
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for s in order:
        h, c = lstm_step(p, norms, x[s], h, c, mask[s])
        states[s] = h
    out = torch.stack(states)

    if kind == "none" and not reverse:  # the unmasked run equals torch's own cell
        cell = torch.nn.LSTMCell(inp, hid)
        with torch.no_grad():
            cell.weight_ih.copy_(p["weight_x"])
            cell.bias_ih.copy_(p["bias"])
            cell.weight_hh.copy_(p["weight_h"])
            cell.bias_hh.zero_()
            hh, cc = h0, c0
            hs, cs = h0, c0
            for s in range(steps):
                hh, cc = cell(x[s], (hh, cc))
                hs, cs = lstm_step(p, norms, x[s], hs, cs)
            assert torch.allclose(hh, hs, atol=1e-6) and torch.allclose(cc, cs, atol=1e-6), name

    return finish(name, kind, {"x": x, "h0": h0, "c0": c0}, p, {"states": out, "last_h": h, "last_c": c}, gen,
                  {"mask": t(mask), "reverse": reverse})


def mlp_attention_case(name, kind, src, batch, ctx_size, state_size, att, lengths):
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    p = {
        "context_to_hidden.weight": 0.4 * torch.randn(att, ctx_size, generator=gen),
        "context_to_hidden.bias": 0.1 * torch.randn(att, generator=gen),
        "state_to_hidden.weight": 0.4 * torch.randn(att, state_size, generator=gen),
        "hidden_to_score.weight": 0.5 * torch.randn(1, att, generator=gen),
        "hidden_to_score.bias": 0.1 * torch.randn(1, generator=gen),
    }
    for v in p.values():
        v.requires_grad_()
    norms = {}
    add_norms(p, norms, (("norm_context", att), ("norm_state", att)), kind, gen)
    ctx = torch.randn(src, batch, ctx_size, generator=gen, requires_grad=True)
    state = torch.randn(batch, state_size, generator=gen, requires_grad=True)
    mask = length_mask(src, batch, lengths)

    pctx = norms["norm_context"](ctx @ p["context_to_hidden.weight"].T + p["context_to_hidden.bias"])
    pstate = norms["norm_state"](state @ p["state_to_hidden.weight"].T)
    hidden = torch.tanh(pctx + pstate.unsqueeze(0))                                       # [S, B, A]
    scores = (hidden @ p["hidden_to_score.weight"].T + p["hidden_to_score.bias"]).squeeze(-1)  # [S, B]
    alpha = torch.softmax(scores.masked_fill(mask == 0, float("-inf")), dim=0)
    context = (alpha.unsqueeze(-1) * ctx).sum(0)                                           # [B, C]
    return finish(name, kind, {"context": ctx, "state": state}, p, {"context": context, "weights": alpha}, gen,
                  {"mask": t(mask)})


def multihead_case(name, batch, tq, tk, d, heads, lengths, causal=False):
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    p = {}
    for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
        p[f"{proj}.weight"] = (0.4 * torch.randn(d, d, generator=gen)).requires_grad_()
        p[f"{proj}.bias"] = (0.1 * torch.randn(d, generator=gen)).requires_grad_()
    query = torch.randn(batch, tq, d, generator=gen, requires_grad=True)
    if causal:  # self-attention: one tensor is query, key and value
        key = value = query
        inputs = {"query": query}
    else:
        key = torch.randn(batch, tk, d, generator=gen, requires_grad=True)
        value = torch.randn(batch, tk, d, generator=gen, requires_grad=True)
        inputs = {"query": query, "key": key, "value": value}
    key_mask = length_mask(tk, batch, lengths).T.contiguous()  # [B, Tk], 1 = real

    mha = torch.nn.MultiheadAttention(d, heads, batch_first=True)
    with torch.no_grad():  # torch's packed projections from ours
        mha.in_proj_weight.copy_(torch.cat([p["q_proj.weight"], p["k_proj.weight"], p["v_proj.weight"]]))
        mha.in_proj_bias.copy_(torch.cat([p["q_proj.bias"], p["k_proj.bias"], p["v_proj.bias"]]))
        mha.out_proj.weight.copy_(p["out_proj.weight"])
        mha.out_proj.bias.copy_(p["out_proj.bias"])
    attn_mask = torch.triu(torch.ones(tq, tk, dtype=torch.bool), diagonal=1) if causal else None
    out, weights = mha(query, key, value, key_padding_mask=key_mask == 0, attn_mask=attn_mask,
                       need_weights=True, average_attn_weights=False)
    case = finish(name, "none", inputs, p, {"output": out, "weights": weights}, gen,
                  {"key_mask": t(key_mask), "heads": heads, "causal": causal})
    w_in, b_in = mha.in_proj_weight.grad.split(d), mha.in_proj_bias.grad.split(d)
    case["grad_params"] = {
        "q_proj.weight": t(w_in[0]), "k_proj.weight": t(w_in[1]), "v_proj.weight": t(w_in[2]),
        "q_proj.bias": t(b_in[0]), "k_proj.bias": t(b_in[1]), "v_proj.bias": t(b_in[2]),
        "out_proj.weight": t(mha.out_proj.weight.grad), "out_proj.bias": t(mha.out_proj.bias.grad),
    }
    return case


reference = {
    "eps": EPS,
    "lstm_cell": [lstm_cell_case("cell_plain", 3, 5, 7)],
    "lstm": [
        lstm_layer_case("plain", "none", 4, 3, 5, 7, [4, 4, 4]),
        lstm_layer_case("plain_masked", "none", 4, 3, 5, 7, [4, 2, 3]),
        lstm_layer_case("layernorm_masked", "layernorm", 4, 3, 5, 7, [4, 1, 3]),
        lstm_layer_case("rmsnorm_masked", "rmsnorm", 4, 3, 5, 7, [2, 4, 3]),
        lstm_layer_case("rmsnorm_reverse", "rmsnorm", 4, 3, 5, 7, [4, 2, 3], reverse=True),
        lstm_layer_case("prmsnorm_wide", "prmsnorm", 3, 2, 6, 17, [3, 2]),
    ],
    "mlp_attention": [
        mlp_attention_case("mlp_plain", "none", 6, 3, 5, 4, 7, [6, 4, 2]),
        mlp_attention_case("mlp_layernorm", "layernorm", 6, 3, 5, 4, 7, [3, 6, 1]),
        mlp_attention_case("mlp_rmsnorm", "rmsnorm", 6, 3, 5, 4, 7, [5, 2, 6]),
    ],
    "multihead": [
        multihead_case("mha_cross_padded", 2, 3, 5, 8, 2, [5, 3]),
        multihead_case("mha_self_causal_padded", 2, 4, 4, 6, 3, [4, 3], causal=True),
    ],
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lstm_attention.json")
with open(path, "w") as f:
    json.dump(reference, f)
print(f"wrote {path} ({os.path.getsize(path) // 1024} KB)")
