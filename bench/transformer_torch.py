"""The Transformer for translation (Vaswani et al. 2017), normalized as in the RMSNorm paper's Table 4
(Zhang & Sennrich 2019), in PyTorch: the twin of models/transformer.h, to time one training step
beside our C++ bench (bench_step --model transformer) and to confirm that both compute the same model.

    python3 bench/transformer_torch.py --norm rmsnorm --threads 1 [--steps 5] [--warmup 2]
        [--position post] [--batch 186] [--src-len 22] [--tgt-len 22] [--vocab 8000] [--d 256]
        [--ffn 1024] [--heads 4] [--layers 3] [--dropout 0.1] [--p 0.0625] [--label-smoothing 0.1]
    python3 bench/transformer_torch.py --check DIR   # DIR from bench_step --model transformer --dump DIR

(Debian's /usr/bin/python3 may have no torch; bench/common.sh's torch_python picks the one that has.)

Timing prints one JSON line: {"impl": "torch", "model": "transformer", "norm", "position", "threads",
"batch", "src_len", "tgt_len", "vocab", "d", "ffn", "heads", "layers", "parameters", "ms_per_step"
(median of the timed steps), "ms_min", "peak_rss_mb"}. With --compile the loss (forward and, through
AOTAutograd, backward) runs under torch.compile, whose CPU backend (Inductor) fuses the element-wise
work into generated C++/OpenMP loops; "impl" is then "torch.compile", and the compilation happens in
the warm-up steps (at least one), outside the timing.

Data, fixed for every step (the same lengths as ours; ids differ, which costs nothing): with L the
--src-len (or --tgt-len) and Lmin = max(1, L - 9), sentence b has length
    source  Lmin + (7 b) % (L - Lmin + 1)     (13-22 for L = 22)
    target  Lmin + (3 b) % (L - Lmin + 1)
ids uniform in [4, vocab) from numpy RandomState(0), the last real token </s> (3), zero-padded past the
length, mask[t, b] = 1 for t < L_b (time-major, as ours; the model transposes to batch-first). 186
pairs: 186 x 22 = 4092 padded tokens a side, what the driver's --batch-tokens 4096 packs.

Model (batch-first, D = d, V = vocab, both sides):
    encoder  x = dropout(sqrt(D) E_src[f] + PE)                 PE sinusoidal (Vaswani 3.5)
             x = EncoderLayer_n(... EncoderLayer_1(x))          padded source keys masked
             x = encoder_norm(x)                                pre-norm only
    decoder  y = dropout(sqrt(D) E_tgt[e_{j-1}] + PE), e_0 the zero vector
             y = DecoderLayer_n(... (y, x))                     causal + padded target keys, padded source keys
             y = decoder_norm(y)                                pre-norm only
    output   logits = y E_tgt^T                                 tied, no bias
    loss     cross-entropy, label smoothing 0.1, summed over the real target tokens / their number
The layers are torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (relu, batch_first,
norm_first = (position == "pre")) with two changes: their attentions' own dropout is set to 0 (torch
gives the attention weights the layer's dropout; ours has attention_dropout 0, the recipe's), and their
norms are ours: layernorm nn.LayerNorm (eps 1e-5, gain and bias, torch's own), rmsnorm nn.RMSNorm (eps
1e-5 inside the root, gain), prmsnorm and l2norm torch_norms.Norm, none nn.Identity.
Init (torch.manual_seed(0)): embeddings N(0, 1/D); every projection Xavier uniform (q, k and v each as
its own D x D matrix, as ours, not torch's packed 3D x D), biases 0, gains 1.
One step: zero grads, forward, backward, Adam lr 7e-4 (the schedule's peak, held), betas (0.9, 0.98),
eps 1e-9, no clip. Embedding gradients are dense (torch's default).

--check DIR loads what bench_step --dump DIR wrote: config.json (sizes, norm, position), the parameters
params/<our name>.npy (gains and biases moved off 1 and 0 by the dump), one batch (source, source_mask,
target, target_mask .npy, time-major, ids stored as float32), our loss and gradient norm (result.json,
dropout 0) and our gradients grads/<our name>.npy. It computes the same in float64 (the exact
reference: the whole difference is then our float32 rounding) and, as a yardstick, in float32 with
torch, and prints both sides' loss and gradient-norm relative differences and the worst per-parameter
gradient difference max |ours - ref| / max |ref| (against 1e-3 of the largest gradient anywhere when
larger: k_proj's bias has an exactly-zero gradient, since a softmax ignores a shift, as do the rows of
words not in the batch). It passes (exit 0) when loss and gradient norm agree to 1e-5 relative and
every gradient to 1e-4:
  - ours is float32 (u = 6e-8). The loss is a mean of log-sum-exps of logits of order 1-10 after a few
    dozen ops per path; each op adds a few ulps, so ~1e-6 relative: 1e-5 leaves 10x room.
  - a gradient sums B*T terms (tens at the check's sizes) through 2 x 2 layers, each with norms whose
    backward divides by an RMS of order 1 and softmaxes over <= 7 keys; nothing amplifies rounding by
    much, so ~1e-6-1e-5 of the parameter's largest gradient; 1e-4 leaves room for the worst cancelling
    sums. torch's own float32 run shows the same size of difference, printed beside ours.
  - relu: a pre-activation within ~1e-6 of 0 could switch between float32 and float64 and move a
    gradient by far more; the check prints the smallest |FFN pre-activation| ("closest_relu_kink")
    so that such a failure explains itself.
"""
import json
import math
import os
import sys

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F

import recipe
import torch_timing
from twin_check import our_gradients, print_check, read_json, verdict
from torch_norms import EPS, make_norm
from torch_tokens import translation_batch

NORMS = ["none", "layernorm", "rmsnorm", "prmsnorm", "l2norm"]


def xavier_attention(attn, d):
    """q, k and v Xavier uniform each as a D x D matrix (ours), out_proj too, biases 0."""
    with torch.no_grad():
        for part in attn.in_proj_weight.split(d):
            nn.init.xavier_uniform_(part)
        nn.init.zeros_(attn.in_proj_bias)
        nn.init.xavier_uniform_(attn.out_proj.weight)
        nn.init.zeros_(attn.out_proj.bias)
    attn.dropout = 0.0  # no dropout on the attention weights (ours: attention_dropout 0)


def prepare_layer(layer, attentions, norms, kind, d, p):
    for attn in attentions:
        xavier_attention(getattr(layer, attn), d)
    with torch.no_grad():
        for linear in (layer.linear1, layer.linear2):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)
    for name in norms:
        setattr(layer, name, make_norm(kind, d, p))
    return layer


def sinusoidal_positions(steps, d):
    """PE[t, 2i] = sin(t / 10000^(2i/d)), PE[t, 2i+1] = cos(...), computed in float64 as ours."""
    t = np.arange(steps, dtype=np.float64)[:, None]
    angle = t * np.exp(-math.log(10000.0) * np.arange(0, d, 2, dtype=np.float64) / d)[None]
    pe = np.zeros((steps, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return torch.from_numpy(pe)


class Transformer(nn.Module):
    def __init__(self, norm, position, vocab, d, ffn, heads, layers, dropout, p, label_smoothing, max_len=256):
        super().__init__()
        self.d, self.dropout, self.label_smoothing = d, dropout, label_smoothing
        pre = position == "pre"
        self.source_words = nn.Embedding(vocab, d)
        self.target_words = nn.Embedding(vocab, d)
        with torch.no_grad():
            nn.init.normal_(self.source_words.weight, 0.0, d ** -0.5)
            nn.init.normal_(self.target_words.weight, 0.0, d ** -0.5)
        common = dict(dim_feedforward=ffn, dropout=dropout, activation="relu", layer_norm_eps=EPS,
                      batch_first=True, norm_first=pre)
        self.encoder = nn.ModuleList(
            prepare_layer(nn.TransformerEncoderLayer(d, heads, **common), ["self_attn"], ["norm1", "norm2"], norm, d, p)
            for _ in range(layers))
        self.decoder = nn.ModuleList(
            prepare_layer(nn.TransformerDecoderLayer(d, heads, **common), ["self_attn", "multihead_attn"],
                          ["norm1", "norm2", "norm3"], norm, d, p)
            for _ in range(layers))
        self.encoder_norm = make_norm(norm, d, p) if pre else None
        self.decoder_norm = make_norm(norm, d, p) if pre else None
        self.register_buffer("positions", sinusoidal_positions(max_len, d).to(torch.get_default_dtype()),
                             persistent=False)

    def embed(self, words, ids, zero_first=False):
        """dropout(sqrt(D) E[ids] + PE) for ids [B, T]; with zero_first the decoder's inputs: the zero
        vector, then the words before the last."""
        x = words(ids) * math.sqrt(self.d)
        if zero_first:
            x = torch.cat([x.new_zeros(x.shape[0], 1, x.shape[2]), x[:, :-1]], 1)
        return F.dropout(x + self.positions[:x.shape[1]], self.dropout, self.training)

    def logits(self, source, source_mask, target, target_mask):
        """Time-major ids [S, B], [T, B] with float masks -> logits [B*T, V], row b*T + t."""
        source, target = source.t(), target.t()
        source_pad, target_pad = source_mask.t() == 0, target_mask.t() == 0   # True = padding
        x = self.embed(self.source_words, source)
        for layer in self.encoder:
            x = layer(x, src_key_padding_mask=source_pad)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        steps = target.shape[1]
        causal = torch.triu(torch.ones(steps, steps, dtype=torch.bool, device=target.device), diagonal=1)
        y = self.embed(self.target_words, target, zero_first=True)
        for layer in self.decoder:
            y = layer(y, x, tgt_mask=causal, tgt_key_padding_mask=target_pad, memory_key_padding_mask=source_pad)
        if self.decoder_norm is not None:
            y = self.decoder_norm(y)
        return y.reshape(-1, self.d) @ self.target_words.weight.t()

    def loss(self, source, source_mask, target, target_mask):
        labels = target.t().masked_fill(target_mask.t() == 0, -100).reshape(-1)
        ce = F.cross_entropy(self.logits(source, source_mask, target, target_mask), labels, ignore_index=-100,
                             label_smoothing=self.label_smoothing, reduction="sum")
        return ce / target_mask.sum()


# ---- the check against bench_step --dump ----

def our_names(torch_name, d):
    """torch's parameter name -> [(our name, slice of its first axis)]: in_proj packs q, k, v."""
    name = torch_name.replace("multihead_attn.", "cross_attn.")
    module, _, leaf = name.rpartition(".")
    if leaf in ("in_proj_weight", "in_proj_bias"):
        kind = "weight" if leaf.endswith("weight") else "bias"
        return [(f"{module}.{proj}.{kind}", slice(i * d, (i + 1) * d)) for i, proj in enumerate(("q_proj", "k_proj",
                                                                                                   "v_proj"))]
    last = module.rpartition(".")[2]
    if leaf == "weight" and (last.startswith("norm") or last.endswith("_norm")):
        leaf = "gain"
    return [(f"{module}.{leaf}", slice(None))]


def run_reference(directory, cfg, dtype):
    """(loss, {our name: gradient as float64 numpy}, smallest |FFN pre-activation|) of the dumped model and
    batch, computed by torch in dtype."""
    torch.set_default_dtype(dtype)
    model = Transformer(cfg["norm"], cfg["position"], cfg["vocab"], cfg["d"], cfg["ffn"], cfg["heads"],
                        cfg["layers"], 0.0, cfg["p"], cfg["label_smoothing"])
    params = dict(model.named_parameters())
    files = {f[:-4] for f in os.listdir(os.path.join(directory, "params")) if f.endswith(".npy")}
    mapped = {name: our_names(name, cfg["d"]) for name in params}
    covered = {ours for parts in mapped.values() for ours, _ in parts}
    if covered != files:
        raise SystemExit(f"error: parameter names differ: torch only {sorted(covered - files)}, "
                         f"ours only {sorted(files - covered)}")
    with torch.no_grad():
        for name, p in params.items():
            for ours, part in mapped[name]:
                value = np.load(os.path.join(directory, "params", ours + ".npy"))
                if tuple(value.shape) != tuple(p[part].shape):
                    raise SystemExit(f"error: {ours} is {value.shape} in ours, {tuple(p[part].shape)} here")
                p[part].copy_(torch.from_numpy(value.astype(np.float64)))
    load = lambda name: np.load(os.path.join(directory, name + ".npy"))
    source, target = (torch.from_numpy(load(n).astype(np.int64)) for n in ("source", "target"))
    source_mask, target_mask = (torch.from_numpy(load(n)).to(dtype) for n in ("source_mask", "target_mask"))
    seen = []
    for layer in [*model.encoder, *model.decoder]:
        layer.linear1.register_forward_hook(lambda m, i, out: seen.append(float(out.detach().abs().min())))
    model.train()  # dropout is 0: train and eval agree (and train keeps torch off its fast path)
    loss = model.loss(source, source_mask, target, target_mask)
    loss.backward()
    grads = {}
    for name, p in params.items():
        for ours, part in mapped[name]:
            grads[ours] = p.grad[part].detach().double().numpy()
    torch.set_default_dtype(torch.float32)
    return loss.item(), grads, min(seen)


def check(directory):
    cfg, ours = read_json(directory, "config.json"), read_json(directory, "result.json")
    ours_grads = our_gradients(directory)
    ref_loss, ref_grads, kink = run_reference(directory, cfg, torch.float64)
    f32_loss, f32_grads, _ = run_reference(directory, cfg, torch.float32)
    if set(ours_grads) != set(ref_grads):
        raise SystemExit(f"error: gradient files differ from the parameters: {sorted(set(ours_grads) ^ set(ref_grads))}")
    mine, yardstick, passed = verdict(ours, ours_grads, (ref_loss, ref_grads), (f32_loss, f32_grads))
    print_check({"norm": cfg["norm"], "position": cfg["position"]}, ours, sum(g.size for g in ref_grads.values()),
                ref_loss, mine, yardstick, passed, "torch", closest_relu_kink=float(f"{kink:.3g}"))


def main():
    args = torch_timing.checked_model_args("transformer", NORMS, check)
    model = Transformer(args.norm, args.position, args.vocab, args.d, args.ffn, args.heads, args.layers,
                        args.dropout, args.p, args.label_smoothing, max_len=max(args.src_len, args.tgt_len))
    model.train()
    inputs = translation_batch(args.batch, args.src_len, args.tgt_len, args.vocab)
    params = list(model.parameters())
    step = torch_timing.compiled_step(args, params, model.loss, *inputs)
    timing = torch_timing.training_step_fields(step, args.steps, args.warmup)
    torch_timing.print_json({"impl": torch_timing.impl(args), "model": "transformer", "norm": args.norm, "position": args.position,
                             "threads": args.threads, "batch": args.batch, "src_len": inputs[0].shape[0],
                             "tgt_len": inputs[2].shape[0], "vocab": args.vocab, "d": args.d, "ffn": args.ffn,
                             "heads": args.heads, "layers": args.layers,
                             "parameters": sum(p.numel() for p in params), **timing})


if __name__ == "__main__":
    main()
