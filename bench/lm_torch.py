"""The LLaMA-style character language model (models/llama.h) in PyTorch: the twin of our
bench_step --model lm, to time one training step beside ours and to confirm that both compute the same
model.

    python3 bench/lm_torch.py --norm rmsnorm --threads 1 [--compile] [--steps 5] [--warmup 2]
        [--batch 32] [--context 128] [--vocab 77] [--d 256] [--ffn 688] [--heads 4] [--layers 4]
        [--embeddings untied] [--lr 1e-3] [--beta1 0.9] [--beta2 0.95] [--clip 1]
    python3 bench/lm_torch.py --check DIR   # DIR from bench_step --model lm --dump DIR

The flags' defaults are the recipe (experiments/common/recipes.h, read through bench/recipe.py).
(Debian's /usr/bin/python3 may have no torch; bench/common.sh's torch_python picks the one that has.)

Timing prints one JSON line: {"impl": "torch" or "torch.compile", "model": "lm", "norm", "threads",
the sizes, "parameters", "ms_per_step" (median of the timed steps), "ms_min", "peak_rss_mb"}. With
--compile the loss (forward and, through AOTAutograd, backward) runs under torch.compile (Inductor), which
compiles in the warm-up steps (at least one), outside the timing.

Data, fixed for every step: ids [B, T + 1] uniform in [0, vocab) from numpy RandomState(0) (ours draw
other ids of the same shape, which costs nothing); the model reads the first T columns and predicts the
last T.

Model (batch-first, as a PyTorch user writes LLaMA, as Hugging Face's LlamaForCausalLM does):
    x = E[ids]                                                   [B, T, d]
    per block  x = x + o_proj(SDPA(rot(q_proj n1(x)), rot(k_proj n1(x)), v_proj n1(x), causal))
               x = x + down(silu(gate n2(x)) * up n2(x))
    logits = lm_head(norm(x))  (or E^T when tied); loss = mean cross-entropy of the B*T next ids
rot rotates unit i of a head with unit i + Dh/2 by angle t / base^(2i/Dh) (rotate-half, HF's
apply_rotary_pos_emb); SDPA is F.scaled_dot_product_attention, torch's fused attention (scale
1/sqrt(Dh)). Norms: layernorm nn.LayerNorm, rmsnorm nn.RMSNorm (eps 1e-5 inside the root), prmsnorm
torch_norms.Norm, none nn.Identity. No biases, no dropout. Init (torch.manual_seed(0)): the embedding,
the head and every projection N(0, 0.02^2), gains 1, biases 0. One step: zero grads, forward, backward,
clip the global gradient norm to 1, Adam lr 1e-3 (the schedule's peak, held), betas (0.9, 0.95),
eps 1e-8.

--check DIR loads what bench_step --dump DIR wrote: config.json (sizes, norm), params/<our name>.npy
(gains and biases moved off 1 and 0 by the dump), the batch (ids.npy, [B, T + 1] stored as float32), our
loss and gradient norm (result.json) and gradients (grads/<our name>.npy). It computes the same in
float64 (the exact reference: the whole difference is then our float32 rounding) and, as a yardstick,
in float32 with torch, and prints both sides' relative differences of loss and gradient norm and the worst
per-parameter gradient difference max |ours - ref| / max |ref| (against 1e-3 of the largest gradient
anywhere when larger). It passes (exit 0) when loss and gradient norm agree to 1e-5 relative and every
gradient to 1e-4:
  - ours is float32 (u = 6e-8). The loss is a mean of 4,096 log-sum-exps of logits of order 1 after a
    few dozen ops per path (4 blocks of norm, projections of 256 terms, rotation, softmax over <= 128
    keys, SwiGLU); each op adds a few ulps and the sums grow ~sqrt(n) u, so ~1e-6 relative: 1e-5 leaves
    10x room.
  - a gradient sums B*T = 4,096 rows of terms through 4 blocks whose norms divide by an RMS of order 1;
    nothing here amplifies rounding by much (SiLU and softmax are smooth, no kink to cross), so ~1e-6-1e-5
    of the parameter's largest gradient; 1e-4 leaves room for the worst cancelling sums. torch's own
    float32 run shows the same size of difference, printed beside ours.
"""
import json
import os
import sys

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F

import recipe
import torch_timing
from torch_norms import make_norm
from twin_check import our_gradients, print_check, read_json, verdict

NORMS = ["none", "layernorm", "rmsnorm", "prmsnorm"]


def rotary_tables(steps, size, base):
    """cos, sin [T, Dh] of the angles t / base^(2i/Dh), i < Dh/2, repeated for the two halves; computed in
    float64, as ours."""
    inv_freq = 1.0 / base ** (np.arange(0, size, 2, dtype=np.float64) / size)
    angles = np.outer(np.arange(steps, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=1)
    return torch.from_numpy(np.cos(angles)), torch.from_numpy(np.sin(angles))


def rotate(x, cos, sin):
    """x [B, H, T, Dh]: x cos + rotate_half(x) sin, rotate_half(x) = (-x2, x1)."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


def linear(n_in, n_out):
    layer = nn.Linear(n_in, n_out, bias=False)
    nn.init.normal_(layer.weight, 0.0, 0.02)
    return layer


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.size = heads, d // heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (linear(d, d) for _ in range(4))

    def forward(self, x, cos, sin):
        b, steps, d = x.shape
        q, k, v = (proj(x).view(b, steps, self.heads, self.size).transpose(1, 2)
                   for proj in (self.q_proj, self.k_proj, self.v_proj))
        out = F.scaled_dot_product_attention(rotate(q, cos, sin), rotate(k, cos, sin), v, is_causal=True)
        return self.out_proj(out.transpose(1, 2).reshape(b, steps, d))


class Block(nn.Module):
    def __init__(self, norm, d, ffn, heads, p):
        super().__init__()
        self.norm1, self.norm2 = make_norm(norm, d, p), make_norm(norm, d, p)
        self.self_attn = Attention(d, heads)
        self.linear1, self.linear3, self.linear2 = linear(d, ffn), linear(d, ffn), linear(ffn, d)  # gate, up, down

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.norm1(x), cos, sin)
        h = self.norm2(x)
        return x + self.linear2(F.silu(self.linear1(h)) * self.linear3(h))


class Llama(nn.Module):
    def __init__(self, norm, vocab, d, ffn, heads, layers, p, tied, context, rotary_base=10000.0):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        nn.init.normal_(self.embed_tokens.weight, 0.0, 0.02)
        self.layers = nn.ModuleList(Block(norm, d, ffn, heads, p) for _ in range(layers))
        self.norm = make_norm(norm, d, p)
        self.lm_head = None if tied else linear(d, vocab)
        cos, sin = rotary_tables(context, d // heads, rotary_base)
        dtype = torch.get_default_dtype()
        self.register_buffer("cos", cos.to(dtype), persistent=False)
        self.register_buffer("sin", sin.to(dtype), persistent=False)

    def loss(self, ids):
        """ids [B, T + 1] -> the mean cross-entropy of ids[:, 1:] given ids[:, :-1]."""
        inputs, targets = ids[:, :-1], ids[:, 1:]
        steps = inputs.shape[1]
        cos, sin = self.cos[:steps], self.sin[:steps]
        x = self.embed_tokens(inputs)
        for block in self.layers:
            x = block(x, cos, sin)
        x = self.norm(x)
        logits = self.lm_head(x) if self.lm_head is not None else x @ self.embed_tokens.weight.t()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# ---- the check against bench_step --dump ----

def our_name(torch_name):
    """torch's parameter name -> ours: the torch norms' "weight" is our "gain"."""
    module, _, leaf = torch_name.rpartition(".")
    last = module.rpartition(".")[2]
    if leaf == "weight" and last.startswith("norm"):
        leaf = "gain"
    return f"{module}.{leaf}"


def run_reference(directory, cfg, dtype):
    """(loss, {our name: gradient as float64 numpy}) of the dumped model and batch, computed by torch in
    dtype."""
    torch.set_default_dtype(dtype)
    ids = np.load(os.path.join(directory, "ids.npy"))
    model = Llama(cfg["norm"], cfg["vocab"], cfg["d"], cfg["ffn"], cfg["heads"], cfg["layers"], cfg["p"],
                  cfg["tie"] == 1, ids.shape[1] - 1, cfg["rotary_base"])
    params = {our_name(name): p for name, p in model.named_parameters()}
    files = {f[:-4] for f in os.listdir(os.path.join(directory, "params")) if f.endswith(".npy")}
    if set(params) != files:
        raise SystemExit(f"error: parameter names differ: torch only {sorted(set(params) - files)}, "
                         f"ours only {sorted(files - set(params))}")
    with torch.no_grad():
        for name, p in params.items():
            value = np.load(os.path.join(directory, "params", name + ".npy"))
            if tuple(value.shape) != tuple(p.shape):
                raise SystemExit(f"error: {name} is {value.shape} in ours, {tuple(p.shape)} here")
            p.copy_(torch.from_numpy(value.astype(np.float64)))
    loss = model.loss(torch.from_numpy(ids.astype(np.int64)))
    loss.backward()
    grads = {name: p.grad.detach().double().numpy() for name, p in params.items()}
    torch.set_default_dtype(torch.float32)
    return loss.item(), grads


def check(directory):
    cfg, ours = read_json(directory, "config.json"), read_json(directory, "result.json")
    ours_grads = our_gradients(directory)
    ref_loss, ref_grads = run_reference(directory, cfg, torch.float64)
    f32_loss, f32_grads = run_reference(directory, cfg, torch.float32)
    if set(ours_grads) != set(ref_grads):
        raise SystemExit(f"error: gradient files differ from the parameters: {sorted(set(ours_grads) ^ set(ref_grads))}")
    mine, yardstick, passed = verdict(ours, ours_grads, (ref_loss, ref_grads), (f32_loss, f32_grads))
    print_check({"model": "lm", "norm": cfg["norm"]}, ours, sum(g.size for g in ref_grads.values()), ref_loss, mine,
                yardstick, passed, "torch")


def main():
    args = torch_timing.checked_model_args("lm", NORMS, check)
    if args.embeddings not in ("tied", "untied"):
        raise SystemExit(f"error: --embeddings tied or untied, not {args.embeddings}")
    model = Llama(args.norm, args.vocab, args.d, args.ffn, args.heads, args.layers, args.p,
                  args.embeddings == "tied", args.context)
    model.train()
    ids = torch.from_numpy(np.random.RandomState(0).randint(0, args.vocab, size=(args.batch, args.context + 1)))
    params = list(model.parameters())
    step = torch_timing.compiled_step(args, params, model.loss, ids)
    timing = torch_timing.training_step_fields(step, args.steps, args.warmup)
    torch_timing.print_json({"impl": torch_timing.impl(args), "model": "lm", "norm": args.norm,
                             "threads": args.threads, "batch": args.batch, "context": args.context,
                             "vocab": args.vocab, "d": args.d, "ffn": args.ffn, "heads": args.heads,
                             "layers": args.layers, "embeddings": args.embeddings,
                             "parameters": sum(p.numel() for p in params), **timing})


if __name__ == "__main__":
    main()
