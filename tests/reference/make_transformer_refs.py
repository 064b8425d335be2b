"""Reference values for the Transformer layers (tests/test_transformer.cpp).

Run with the PyTorch of python3:  python3 tests/reference/make_transformer_refs.py
Writes tests/reference/transformer.json:

  {"torch": version, "eps": 1e-5, "encoder": [case, ...], "decoder": [case, ...]}

Every case is one layer (model size 8, 2 heads, FFN 16, batch 2, source length
5, target length 4) with

  name, norm (layernorm|rmsnorm|prmsnorm), position (post|pre), p (pRMSNorm's
  fraction: k = floor(8·0.5) = 4 units), model_size, heads, ffn_size,
  inputs (x; the decoder also memory), masks (encoder key_mask [B, S]; decoder
  target_mask [B, T] and memory_mask [B, S]; 1 = real token), params under our
  dotted names, outputs ("output"), projections (one random tensor per output),
  grad_inputs and grad_params: the gradients of sum(output · projection).

LayerNorm cases are torch.nn.TransformerEncoderLayer / TransformerDecoderLayer
(dropout 0, relu, batch_first, norm_first False = post, True = pre) in float64
and training mode (which keeps torch off its fused fast path), with
src_key_padding_mask / tgt_key_padding_mask / memory_key_padding_mask (True =
padded, i.e. our mask == 0) and a boolean causal tgt_mask. The RMSNorm cases
are the same torch layers with their norm modules replaced by the formula
(ε inside the square root, as NormOptions' default eps_inside):
  rmsnorm   x · rsqrt(mean(x²) + ε) · g
  prmsnorm  x · rsqrt(mean(x[..., :k]²) + ε) · g
Name map: torch's packed self_attn.in_proj_weight / in_proj_bias are our
self_attn.{q,k,v}_proj.{weight,bias} (thirds, in that order); torch's
multihead_attn is our cross_attn; norm*.weight is our norm*.gain.

Inputs, parameters and projections are float32 values written exactly (9
significant digits); the layers run in float64 on them, so the reference carries
no float32 rounding of its own, and outputs and gradients are written with 9
significant digits (relative error ≤ 5e-9, far under the test's tolerance).
Every FFN pre-activation is at least 1e-3 away from relu's kink (a case's seed
is crc32("name/i") for the first i = 0, 1, ... that gives this), so that float32
rounding on our side (~1e-6) cannot switch a unit on or off.
"""
import json
import os
import zlib

import torch

EPS = 1e-5
D, HEADS, FFN, BATCH, SRC, TGT = 8, 2, 16, 2, 5, 4
P = 0.5  # pRMSNorm's fraction: k = 4 of 8 units
KINK = 1e-3


def t(x):
    return {"shape": list(x.shape), "data": [float(f"{v:.9g}") + 0.0 for v in x.detach().reshape(-1).tolist()]}


def randn(gen, *shape, scale=1.0, shift=0.0):
    """float32 normal values (so our float32 copy is exact), as float64."""
    return (shift + scale * torch.randn(*shape, generator=gen)).float().double()


class RMS(torch.nn.Module):
    """RMSNorm (k = None) or pRMSNorm over the first k units, ε inside the root."""

    def __init__(self, n, k=None):
        super().__init__()
        self.k = k
        self.weight = torch.nn.Parameter(torch.ones(n, dtype=torch.float64))

    def forward(self, x):
        head = x if self.k is None else x[..., :self.k]
        return x * torch.rsqrt(head.pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def length_mask(batch, steps, lengths):  # [B, T], 1 = real
    mask = torch.ones(batch, steps, dtype=torch.float64)
    for b, length in enumerate(lengths):
        mask[b, length:] = 0
    return mask


def our_name(torch_name):
    """torch parameter name → ours (in_proj is split by the caller)."""
    name = torch_name.replace("multihead_attn.", "cross_attn.")
    if name.startswith("norm") and name.endswith(".weight"):
        name = name[: -len("weight")] + "gain"
    return name


def fill_params(layer, gen):
    """Random parameters into `layer`; returns them under our names."""
    params = {}
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name.endswith("in_proj_weight"):
                value = randn(gen, 3 * D, D, scale=0.4)
            elif name.endswith("in_proj_bias") or (not name.startswith("norm") and name.endswith("bias")):
                value = randn(gen, *p.shape, scale=0.1)
            elif name.startswith("norm") and name.endswith("weight"):
                value = randn(gen, *p.shape, scale=0.2, shift=1.0)
            elif name.startswith("norm"):  # LayerNorm bias
                value = randn(gen, *p.shape, scale=0.1)
            elif name.startswith("linear2"):
                value = randn(gen, *p.shape, scale=0.3)
            else:  # out_proj.weight, linear1.weight
                value = randn(gen, *p.shape, scale=0.4)
            p.copy_(value)
            for ours, part in split_named(name, value):
                params[ours] = part
    return params


def split_named(torch_name, value):
    """[(our name, tensor)] for one torch parameter (or its gradient)."""
    if torch_name.endswith("in_proj_weight") or torch_name.endswith("in_proj_bias"):
        prefix = our_name(torch_name).rsplit(".", 1)[0]
        kind = "weight" if torch_name.endswith("weight") else "bias"
        return [(f"{prefix}.{proj}.{kind}", part) for proj, part in zip(("q_proj", "k_proj", "v_proj"), value.split(D))]
    return [(our_name(torch_name), value)]


def replace_norms(layer, kind, count):
    if kind == "layernorm":
        return
    k = None if kind == "rmsnorm" else int(D * P)
    for i in range(1, count + 1):
        setattr(layer, f"norm{i}", RMS(D, k))


def watch_kink(layer):
    """Records the smallest |FFN pre-activation| of every forward."""
    seen = []
    layer.linear1.register_forward_hook(lambda m, i, out: seen.append(out.detach().abs().min().item()))
    return seen


class NearKink(Exception):
    pass


def finish(name, kind, position, layer, inputs, masks, output, gen, seen):
    if min(seen) <= KINK:
        raise NearKink(name)
    projection = randn(gen, *output.shape)
    (output * projection).sum().backward()
    grads = {}
    for tname, p in layer.named_parameters():
        for ours, part in split_named(tname, p.grad):
            grads[ours] = part
    return {
        "name": name, "norm": kind, "position": position, "p": P,
        "model_size": D, "heads": HEADS, "ffn_size": FFN,
        "inputs": {k: t(v) for k, v in inputs.items()},
        "masks": {k: t(v) for k, v in masks.items()},
        "outputs": {"output": t(output)},
        "projections": {"output": t(projection)},
        "grad_inputs": {k: t(v.grad) for k, v in inputs.items()},
    }, grads


def first_clean(make, kind, position):
    """make(kind, position, seed) for seeds 0, 1, ... until no FFN unit sits near the kink."""
    for seed in range(100):
        try:
            return make(kind, position, seed)
        except NearKink:
            continue
    raise RuntimeError(f"no seed keeps {kind} {position} away from relu's kink")


def encoder_case(kind, position, seed):
    name = f"encoder_{kind}_{position}"
    gen = torch.Generator().manual_seed(zlib.crc32(f"{name}/{seed}".encode()))
    layer = torch.nn.TransformerEncoderLayer(D, HEADS, FFN, dropout=0.0, activation="relu", layer_norm_eps=EPS,
                                             batch_first=True, norm_first=position == "pre", dtype=torch.float64)
    replace_norms(layer, kind, 2)
    layer.train()  # the slow path (the fast path runs only in eval without gradients)
    params = fill_params(layer, gen)
    x = randn(gen, BATCH, SRC, D).requires_grad_()
    key_mask = length_mask(BATCH, SRC, [SRC, 3])
    seen = watch_kink(layer)
    out = layer(x, src_key_padding_mask=key_mask == 0)
    case, grads = finish(name, kind, position, layer, {"x": x}, {"key_mask": key_mask}, out, gen, seen)
    case["params"] = {k: t(v) for k, v in params.items()}
    case["grad_params"] = {k: t(v) for k, v in grads.items()}
    return case


def decoder_case(kind, position, seed):
    name = f"decoder_{kind}_{position}"
    gen = torch.Generator().manual_seed(zlib.crc32(f"{name}/{seed}".encode()))
    layer = torch.nn.TransformerDecoderLayer(D, HEADS, FFN, dropout=0.0, activation="relu", layer_norm_eps=EPS,
                                             batch_first=True, norm_first=position == "pre", dtype=torch.float64)
    replace_norms(layer, kind, 3)
    layer.train()
    params = fill_params(layer, gen)
    x = randn(gen, BATCH, TGT, D).requires_grad_()
    memory = randn(gen, BATCH, SRC, D).requires_grad_()
    target_mask = length_mask(BATCH, TGT, [TGT, 3])
    memory_mask = length_mask(BATCH, SRC, [2, SRC])
    causal = torch.triu(torch.ones(TGT, TGT, dtype=torch.bool), diagonal=1)  # True = blocked (a future key)
    seen = watch_kink(layer)
    out = layer(x, memory, tgt_mask=causal, tgt_key_padding_mask=target_mask == 0,
                memory_key_padding_mask=memory_mask == 0)
    case, grads = finish(name, kind, position, layer, {"x": x, "memory": memory},
                         {"target_mask": target_mask, "memory_mask": memory_mask}, out, gen, seen)
    case["params"] = {k: t(v) for k, v in params.items()}
    case["grad_params"] = {k: t(v) for k, v in grads.items()}
    return case


torch.use_deterministic_algorithms(True)
cases = [(kind, position) for kind in ("layernorm", "rmsnorm", "prmsnorm") for position in ("post", "pre")]
reference = {
    "torch": torch.__version__,
    "eps": EPS,
    "encoder": [first_clean(encoder_case, *c) for c in cases],
    "decoder": [first_clean(decoder_case, *c) for c in cases],
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "transformer.json")
with open(path, "w") as f:
    json.dump(reference, f, separators=(",", ":"))
print(f"wrote {path} ({os.path.getsize(path) // 1024} KB)")
