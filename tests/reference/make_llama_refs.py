"""Reference values for the rotary op and the LLaMA-style model (tests/test_llama.cpp).

Run with a Python that has torch:  /tmp/torchenv/bin/python tests/reference/make_llama_refs.py
Writes tests/reference/llama.json:

  {"torch": version, "eps": 1e-5, "rotary": [case, ...], "encoder_layers": [case, ...],
   "models": [case, ...]}

A rotary case: x [B, T, H, Dh], positions [T], base, the output, a random
projection and grad_x, the gradient of sum(output · projection). It is Hugging
Face's apply_rotary_pos_emb (rotate_half, the angles as cat(freqs, freqs)) on
x transposed to HF's [B, H, T, Dh], in float64; one case has position 100000,
where angles computed in float32 (as HF does) would move a cosine by 4e-6.

An encoder-layer case is torch.nn.TransformerEncoderLayer (model size 8, 2
heads, FFN 16, batch 2, length 5, dropout 0, batch_first, training mode) with
activation "gelu", a causal src_mask and src_key_padding_mask, post-norm with
LayerNorm or pre-norm with torch.nn.RMSNorm in place of its norms: our
DecoderOnlyBlock with feed_forward = gelu. Fields:
name, norm, position, x, key_mask [B, S] (1 = real), params under our names
(in_proj_weight / in_proj_bias split into q_proj, k_proj, v_proj; norm*.weight
is our norm*.gain), output, projection, grad_x and grad_params of
sum(output · projection).

A model case is a LLaMA written here with torch.nn the way HF's
LlamaForCausalLM is written (RMSNorm, rotary Q and K, causal
scaled_dot_product_attention, SwiGLU MLP with gate/up/down, no biases, final
norm, lm_head or tied), in float64, with its norms one of
  rmsnorm    torch.nn.RMSNorm (x · rsqrt(mean(x²) + ε) · g)
  prmsnorm   x · rsqrt(mean(x[..., :k]²) + ε) · g, k = floor(d·p)
  layernorm  torch.nn.LayerNorm
and its fields: name, norm, p, tie, vocab, layers, model_size, heads,
ffn_size, rotary_base, lr; ids and targets [B, T]; params under our names
(the map is in models/llama.h); logits [B, T, V]; loss, the mean
cross-entropy of logits against targets; grad_params, its gradients; then one
torch.optim.Adam step (lr, betas 0.9/0.999, eps 1e-8): params_after and
loss_after, the loss at the new parameters.

Parameters and inputs are float32 values written exactly (9 significant
digits) and the models run in float64 on them, so the reference carries no
float32 rounding of its own; outputs and gradients are written with 9
significant digits (relative error ≤ 5e-9). Every function here is smooth
(SiLU, softmax, the norms), so no case needs its inputs kept from a kink.
"""
import json
import os
import zlib

import torch
import torch.nn.functional as F

EPS = 1e-5


def t(x):
    return {"shape": list(x.shape), "data": [float(f"{v:.9g}") + 0.0 for v in x.detach().reshape(-1).tolist()]}


def ints(x):
    return {"shape": list(x.shape), "data": [int(v) for v in x.reshape(-1).tolist()]}


def randn(gen, *shape, scale=1.0, shift=0.0):
    """float32 normal values (so our float32 copy is exact), as float64."""
    return (shift + scale * torch.randn(*shape, generator=gen)).float().double()


# ---- rotary embeddings, as HF's modeling_llama writes them ----

def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotary_tables(positions, dim, base):
    """cos, sin [T, Dh] (LlamaRotaryEmbedding, in float64)."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = torch.outer(positions.double(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rotary(x, cos, sin):
    """x [B, H, T, Dh]: x·cos + rotate_half(x)·sin (apply_rotary_pos_emb)."""
    return x * cos + rotate_half(x) * sin


def rotary_case(name, shape, positions, base):
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    x = randn(gen, *shape).requires_grad_()
    cos, sin = rotary_tables(torch.tensor(positions), shape[3], base)
    out = apply_rotary(x.transpose(1, 2), cos, sin).transpose(1, 2)  # ours is [B, T, H, Dh]; HF's [B, H, T, Dh]
    projection = randn(gen, *out.shape)
    (out * projection).sum().backward()
    return {"name": name, "base": base, "positions": positions, "x": t(x), "output": t(out),
            "projection": t(projection), "grad_x": t(x.grad)}


# ---- a decoder-only block with GELU (torch's encoder layer, causal) ----

D, HEADS, FFN, BATCH, STEPS = 8, 2, 16, 2, 5


def split_params(layer, values):
    """{our name: tensor} for {torch name: tensor}: the packed in_proj split in three."""
    out = {}
    for name, value in values.items():
        if "in_proj" in name:
            kind = "weight" if name.endswith("weight") else "bias"
            for proj, part in zip(("q_proj", "k_proj", "v_proj"), value.split(D)):
                out[f"self_attn.{proj}.{kind}"] = part
        elif name.startswith("norm") and name.endswith(".weight"):
            out[name[: -len("weight")] + "gain"] = value
        else:
            out[name] = value
    return out


def encoder_case(name, norm, position):
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    layer = torch.nn.TransformerEncoderLayer(D, HEADS, FFN, dropout=0.0, activation="gelu", layer_norm_eps=EPS,
                                             batch_first=True, norm_first=position == "pre", dtype=torch.float64)
    if norm == "rmsnorm":
        layer.norm1 = torch.nn.RMSNorm(D, eps=EPS, dtype=torch.float64)
        layer.norm2 = torch.nn.RMSNorm(D, eps=EPS, dtype=torch.float64)
    layer.train()  # the slow path: the fast path runs only in eval without gradients
    with torch.no_grad():
        for pname, p in layer.named_parameters():
            if pname.startswith("norm") and pname.endswith("weight"):
                p.copy_(randn(gen, *p.shape, scale=0.2, shift=1.0))
            elif pname.endswith("bias"):
                p.copy_(randn(gen, *p.shape, scale=0.1))
            else:
                p.copy_(randn(gen, *p.shape, scale=0.4))
    x = randn(gen, BATCH, STEPS, D).requires_grad_()
    key_mask = torch.ones(BATCH, STEPS, dtype=torch.float64)
    key_mask[1, 3:] = 0
    causal = torch.triu(torch.ones(STEPS, STEPS, dtype=torch.bool), diagonal=1)  # True = blocked (a later key)
    out = layer(x, src_mask=causal, src_key_padding_mask=key_mask == 0)
    projection = randn(gen, *out.shape)
    (out * projection).sum().backward()
    params = split_params(layer, {n: p for n, p in layer.named_parameters()})
    grads = split_params(layer, {n: p.grad for n, p in layer.named_parameters()})
    return {"name": name, "norm": norm, "position": position, "x": t(x), "key_mask": t(key_mask),
            "params": {k: t(v) for k, v in params.items()}, "output": t(out), "projection": t(projection),
            "grad_x": t(x.grad), "grad_params": {k: t(v) for k, v in grads.items()}}


# ---- the model ----

class PartialRMSNorm(torch.nn.Module):
    def __init__(self, n, k):
        super().__init__()
        self.k = k
        self.weight = torch.nn.Parameter(torch.ones(n, dtype=torch.float64))

    def forward(self, x):
        return x * torch.rsqrt(x[..., : self.k].pow(2).mean(-1, keepdim=True) + EPS) * self.weight


def make_norm(kind, n, p):
    if kind == "rmsnorm":
        return torch.nn.RMSNorm(n, eps=EPS, dtype=torch.float64)
    if kind == "prmsnorm":
        return PartialRMSNorm(n, max(1, int(n * p)))
    return torch.nn.LayerNorm(n, eps=EPS, dtype=torch.float64)


def linear(n_in, n_out):
    return torch.nn.Linear(n_in, n_out, bias=False, dtype=torch.float64)


class Attention(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.size = heads, d // heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (linear(d, d) for _ in range(4))

    def forward(self, x, cos, sin):
        b, steps, d = x.shape
        q, k, v = (proj(x).view(b, steps, self.heads, self.size).transpose(1, 2)
                   for proj in (self.q_proj, self.k_proj, self.v_proj))
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # softmax(q kᵀ/√Dh) v, future keys blocked
        return self.o_proj(out.transpose(1, 2).reshape(b, steps, d))


class MLP(torch.nn.Module):
    def __init__(self, d, ffn):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = linear(d, ffn), linear(d, ffn), linear(ffn, d)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["model_size"]
        self.input_layernorm = make_norm(c["norm"], d, c["p"])
        self.self_attn = Attention(d, c["heads"])
        self.post_attention_layernorm = make_norm(c["norm"], d, c["p"])
        self.mlp = MLP(d, c["ffn_size"])

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = torch.nn.Embedding(c["vocab"], c["model_size"], dtype=torch.float64)
        self.layers = torch.nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = make_norm(c["norm"], c["model_size"], c["p"])
        self.lm_head = None if c["tie"] else linear(c["model_size"], c["vocab"])

    def forward(self, ids):
        x = self.embed_tokens(ids)
        cos, sin = rotary_tables(torch.arange(ids.shape[1]), self.c["model_size"] // self.c["heads"],
                                 self.c["rotary_base"])
        for block in self.layers:
            x = block(x, cos, sin)
        x = self.norm(x)
        return x @ self.embed_tokens.weight.T if self.lm_head is None else self.lm_head(x)


OUR_NAMES = [
    ("input_layernorm.weight", "norm1.gain"), ("input_layernorm.bias", "norm1.bias"),
    ("post_attention_layernorm.weight", "norm2.gain"), ("post_attention_layernorm.bias", "norm2.bias"),
    ("self_attn.o_proj.", "self_attn.out_proj."),
    ("mlp.gate_proj.", "linear1."), ("mlp.up_proj.", "linear3."), ("mlp.down_proj.", "linear2."),
]


def our_name(torch_name):
    if torch_name.startswith("norm."):
        return torch_name.replace("weight", "gain")
    for theirs, ours in OUR_NAMES:
        torch_name = torch_name.replace(theirs, ours)
    return torch_name


def fill_params(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(randn(gen, *p.shape, scale=0.2, shift=1.0))
            elif "norm" in name:  # LayerNorm's bias
                p.copy_(randn(gen, *p.shape, scale=0.1))
            elif name.startswith("embed_tokens"):
                p.copy_(randn(gen, *p.shape, scale=0.5))
            else:
                p.copy_(randn(gen, *p.shape, scale=0.3))


def model_case(name, norm, tie, rotary_base):
    c = {"name": name, "norm": norm, "p": 0.5, "tie": tie, "vocab": 11, "layers": 2, "model_size": 8, "heads": 2,
         "ffn_size": 12, "rotary_base": rotary_base, "lr": 0.01}
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    model = Llama(c)
    fill_params(model, gen)
    batch, steps = 2, 6
    ids = torch.randint(0, c["vocab"], (batch, steps), generator=gen)
    targets = torch.randint(0, c["vocab"], (batch, steps), generator=gen)
    c["ids"], c["targets"] = ints(ids), ints(targets)
    c["params"] = {our_name(n): t(p) for n, p in model.named_parameters()}
    logits = model(ids)
    loss = F.cross_entropy(logits.reshape(-1, c["vocab"]), targets.reshape(-1))
    loss.backward()
    c["logits"], c["loss"] = t(logits), loss.item()
    c["grad_params"] = {our_name(n): t(p.grad) for n, p in model.named_parameters()}
    torch.optim.Adam(model.parameters(), lr=c["lr"], betas=(0.9, 0.999), eps=1e-8).step()
    c["params_after"] = {our_name(n): t(p) for n, p in model.named_parameters()}
    with torch.no_grad():
        c["loss_after"] = F.cross_entropy(model(ids).reshape(-1, c["vocab"]), targets.reshape(-1)).item()
    return c


torch.use_deterministic_algorithms(True)
reference = {
    "torch": torch.__version__,
    "eps": EPS,
    "rotary": [
        rotary_case("rotary_from_0", (2, 5, 3, 6), [0, 1, 2, 3, 4], 10000.0),
        rotary_case("rotary_positions", (1, 4, 2, 8), [7, 0, 100000, 3], 10000.0),
        rotary_case("rotary_base_100", (2, 3, 1, 4), [5, 6, 7], 100.0),
    ],
    "encoder_layers": [
        encoder_case("encoder_gelu_causal_layernorm_post", "layernorm", "post"),
        encoder_case("encoder_gelu_causal_rmsnorm_pre", "rmsnorm", "pre"),
    ],
    "models": [
        model_case("llama_rmsnorm_untied", "rmsnorm", False, 10000.0),
        model_case("llama_prmsnorm_tied", "prmsnorm", True, 10000.0),
        model_case("llama_layernorm_untied_base_100", "layernorm", False, 100.0),
    ],
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama.json")
with open(path, "w") as f:
    json.dump(reference, f, separators=(",", ":"))
print(f"wrote {path} ({os.path.getsize(path) // 1024} KB)")
