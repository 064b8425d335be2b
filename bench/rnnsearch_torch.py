"""RNNSearch as Nematus builds it (Bahdanau et al. 2015; Sennrich et al. 2017), normalized as in the
RMSNorm paper's translation experiment (Zhang & Sennrich 2019, Tables 2-3), in PyTorch: the twin of
models/rnnsearch.h, to time one training step beside our C++ bench (bench_rnnsearch) and to confirm
that both compute the same model.

    /usr/bin/python3 bench/rnnsearch_torch.py --norm rmsnorm --threads 1 [--steps 5] [--warmup 2]
        [--batch 80] [--src-len 22] [--tgt-len 22] [--vocab 8000] [--embed 256] [--hidden 256]
        [--dropout 0.2] [--p 0.0625] [--label-smoothing 0.1] [--compile]
    /usr/bin/python3 bench/rnnsearch_torch.py --check DIR     # DIR from bench_rnnsearch --dump DIR

Timing prints one JSON line: {"impl": "torch", "norm", "threads", "batch", "src_len", "tgt_len",
"vocab", "embed", "hidden", "parameters", "ms_per_step" (median of the timed steps), "ms_min"}. With
--compile the loss (forward and, through AOTAutograd, backward; the Python time loops unrolled into one
graph) runs under torch.compile with its CPU backend (Inductor), "impl" is then "torch.compile", and
the compilation happens in the warm-up steps (at least one), outside the timing.

Data, fixed for every step (the same lengths as ours; ids differ, which costs nothing): with L the
--src-len (or --tgt-len) and Lmin = max(1, L - 9), sentence b has length
    source  Lmin + (7 b) % (L - Lmin + 1)     (13-22 for L = 22, every length once in 10 sentences)
    target  Lmin + (3 b) % (L - Lmin + 1)
like Multi30k's subword sentences; ids uniform in [4, vocab) from numpy RandomState(0), the last
real token </s> (3), zero-padded (<pad> = 0) past the length, mask[t, b] = 1 for t < L_b.

Model, time-major, V = vocab (both sides), E = embed, H = hidden, C = A = 2H:
    GRU cell (layers/gru.h), four separately normalized groups:
        [a_r, a_u] = norm_x_gates(x W_xg^T + b_g) + norm_h_gates(h U_g^T)       (2H jointly)
        a_c        = norm_x_cand(x W_xc^T + b_c) + r * norm_h_cand(h U_c^T)     (H)
        r, u = sigmoid(a_r), sigmoid(a_u);  h' = u h + (1 - u) tanh(a_c);  h' = h where mask = 0
      the input terms of a whole sequence in one GEMM per group, the recurrent ones step by step.
    encoder   x = dropout(E_src[f]),  C = [GRU_fwd(x); GRU_bwd(x)]                [S, B, 2H]
    init      s_0 = tanh(norm_init(W_init mean_i C_i + b_init))    mean over real source positions
    decoder   y'_j = dropout(E_tgt[e_{j-1}]), y'_1 = 0                             [T, B, E]
              s'_j = GRU1(y'_j, s_{j-1});  c_j = attention(s'_j, C);  s_j = GRU2(c_j, s'_j)
    attention P = norm_context(C W_c^T + b_c) (once),  q = norm_state(s' W_s^T) (no bias),
              e = v^T tanh(P + q) + b_v,  alpha = softmax over real source positions, c = sum alpha C
    output    t_j = tanh(norm_s(W_s s_j + b_s) + norm_y(W_y y'_j + b_y) + norm_c(W_c c_j + b_c))
              logits_j = W_o dropout(t_j) + b_o              (all T*B positions at once, no norm)
    loss      cross-entropy with label smoothing 0.1 over the real target tokens, summed, / B
Norms over the last axis: layernorm F.layer_norm (eps 1e-5, gain and bias); rmsnorm
x * rsqrt(mean(x^2) + 1e-5) * gain; prmsnorm the same with the mean of squares over the first
k = max(1, floor(n p)) units (layers/normalization.cpp's partial_units); l2norm
x * rsqrt(sum(x^2) + 1e-5) * gain; none. Init (torch.manual_seed(0)): every weight N(0, 0.01^2), each
H x H block of U_g and U_c orthogonal, biases 0, gains 1 (Nematus).
One step: zero grads, forward, backward, clip_grad_norm_ 1 (global), Adam lr 1e-4. Embedding
gradients are dense (torch's default, sparse=False).

--check DIR loads what bench_rnnsearch --dump DIR wrote: config.json (sizes, norm), the initial
parameters params/<our name>.npy, one batch (source, source_mask, target, target_mask .npy,
time-major, ids stored as float32), ours' loss and global gradient norm (result.json, dropout 0) and
ours' gradients grads/<our name>.npy; it computes the same in float64 and prints both, their
relative differences and the worst per-parameter gradient difference (max |ours - torch| over max |torch|).
"""
import json
import math
import os

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F

import recipe
import torch_timing
from torch_norms import Norm
from torch_tokens import translation_batch

NORMS = ["none", "layernorm", "rmsnorm", "prmsnorm", "l2norm"]


def normal_linear(n_in, n_out, bias=True):
    linear = nn.Linear(n_in, n_out, bias=bias)
    with torch.no_grad():
        nn.init.normal_(linear.weight, 0.0, 0.01)
        if bias:
            nn.init.zeros_(linear.bias)
    return linear


class GRUCell(nn.Module):
    def __init__(self, norm, n_in, hidden, p):
        super().__init__()
        h = hidden
        self.weight_x_gates = nn.Parameter(torch.randn(2 * h, n_in) * 0.01)
        self.bias_gates = nn.Parameter(torch.zeros(2 * h))
        self.weight_x_cand = nn.Parameter(torch.randn(h, n_in) * 0.01)
        self.bias_cand = nn.Parameter(torch.zeros(h))
        self.weight_h_gates = nn.Parameter(torch.empty(2 * h, h))
        self.weight_h_cand = nn.Parameter(torch.empty(h, h))
        with torch.no_grad():
            nn.init.orthogonal_(self.weight_h_gates[:h])
            nn.init.orthogonal_(self.weight_h_gates[h:])
            nn.init.orthogonal_(self.weight_h_cand)
        self.norm_x_gates, self.norm_x_cand = Norm(norm, 2 * h, p), Norm(norm, h, p)
        self.norm_h_gates, self.norm_h_cand = Norm(norm, 2 * h, p), Norm(norm, h, p)

    def project_input(self, x):
        """x [..., I] -> the normalized input terms [..., 2H] and [..., H], for any number of positions."""
        return (self.norm_x_gates(F.linear(x, self.weight_x_gates, self.bias_gates)),
                self.norm_x_cand(F.linear(x, self.weight_x_cand, self.bias_cand)))

    def step(self, x_gates, x_cand, h, keep=None):
        """One step from the input terms [B, 2H], [B, H] and h [B, H]; keep [B, 1] bool (real token)."""
        r, u = torch.sigmoid(x_gates + self.norm_h_gates(F.linear(h, self.weight_h_gates))).chunk(2, 1)
        c = torch.tanh(x_cand + r * self.norm_h_cand(F.linear(h, self.weight_h_cand)))
        h_new = u * h + (1 - u) * c
        return h_new if keep is None else torch.where(keep, h_new, h)

    def forward(self, x, h, keep=None):
        return self.step(*self.project_input(x), h, keep)


class GRU(nn.Module):
    def __init__(self, norm, n_in, hidden, p, reverse=False):
        super().__init__()
        self.reverse = reverse
        self.cell = GRUCell(norm, n_in, hidden, p)

    def forward(self, x, keep):
        """x [T, B, I], keep [T, B, 1] bool -> every state [T, B, H] in time order."""
        steps, batch = x.shape[0], x.shape[1]
        # unbind, not [t]: the backward of T selects would add T zero-filled [T, B, .] tensors.
        gates, cand = (a.unbind(0) for a in self.cell.project_input(x))
        h = x.new_zeros(batch, self.cell.weight_h_cand.shape[0])
        states = [None] * steps
        for t in (reversed(range(steps)) if self.reverse else range(steps)):
            h = self.cell.step(gates[t], cand[t], h, keep[t])
            states[t] = h
        return torch.stack(states)


class BiGRU(nn.Module):
    def __init__(self, norm, n_in, hidden, p):
        super().__init__()
        self.forward_gru = GRU(norm, n_in, hidden, p)
        self.backward_gru = GRU(norm, n_in, hidden, p, reverse=True)

    def forward(self, x, keep):
        return torch.cat([self.forward_gru(x, keep), self.backward_gru(x, keep)], 2)


class MLPAttention(nn.Module):
    def __init__(self, norm, context, state, hidden, p):
        super().__init__()
        self.context_to_hidden = normal_linear(context, hidden)
        self.state_to_hidden = normal_linear(state, hidden, bias=False)
        self.hidden_to_score = normal_linear(hidden, 1)
        self.norm_context, self.norm_state = Norm(norm, hidden, p), Norm(norm, hidden, p)

    def precompute(self, context):
        return self.norm_context(self.context_to_hidden(context))                 # [S, B, A]

    def forward(self, state, projected, context, blocked):
        hidden = torch.tanh(projected + self.norm_state(self.state_to_hidden(state))[None])
        scores = self.hidden_to_score(hidden).squeeze(2)                          # [S, B]
        alpha = scores.masked_fill(blocked, -1e30).softmax(0).masked_fill(blocked, 0.0)
        return (alpha[:, :, None] * context).sum(0), alpha                        # [B, 2H]


class ConditionalGRU(nn.Module):
    def __init__(self, norm, embed, hidden, context, attention, p):
        super().__init__()
        self.gru1 = GRUCell(norm, embed, hidden, p)
        self.attention = MLPAttention(norm, context, hidden, attention, p)
        self.gru2 = GRUCell(norm, context, hidden, p)


class RNNSearch(nn.Module):
    def __init__(self, norm, vocab, embed, hidden, dropout, p, label_smoothing):
        super().__init__()
        both = 2 * hidden
        self.dropout, self.label_smoothing = dropout, label_smoothing
        self.source_words = nn.Embedding(vocab, embed)
        self.target_words = nn.Embedding(vocab, embed)
        with torch.no_grad():
            nn.init.normal_(self.source_words.weight, 0.0, 0.01)
            nn.init.normal_(self.target_words.weight, 0.0, 0.01)
        self.encoder = BiGRU(norm, embed, hidden, p)
        self.init_state = normal_linear(both, hidden)
        self.norm_init = Norm(norm, hidden, p)
        self.decoder = ConditionalGRU(norm, embed, hidden, both, both, p)
        self.output_state = normal_linear(hidden, embed)
        self.output_previous = normal_linear(embed, embed)
        self.output_context = normal_linear(both, embed)
        self.output_words = normal_linear(embed, vocab)
        self.norm_output_state = Norm(norm, embed, p)
        self.norm_output_previous = Norm(norm, embed, p)
        self.norm_output_context = Norm(norm, embed, p)

    def logits(self, source, source_mask, target, target_mask):
        """ids [S, B] and [T, B] with float masks -> logits [T*B, V], row t*B + b."""
        src_keep = source_mask[:, :, None] > 0
        x = F.dropout(self.source_words(source), self.dropout, self.training)
        context = self.encoder(x, src_keep)                                       # [S, B, 2H]
        mean = (context * source_mask[:, :, None]).sum(0) / source_mask.sum(0)[:, None]
        state = torch.tanh(self.norm_init(self.init_state(mean)))                 # [B, H]

        y = F.dropout(self.target_words(target[:-1]), self.dropout, self.training)
        previous = torch.cat([y.new_zeros(1, y.shape[1], y.shape[2]), y])         # y' [T, B, E]
        dec = self.decoder
        gates, cand = (a.unbind(0) for a in dec.gru1.project_input(previous))
        projected = dec.attention.precompute(context)
        blocked = source_mask == 0
        tgt_keep = (target_mask[:, :, None] > 0).unbind(0)
        states, contexts = [], []
        for t in range(target.shape[0]):
            intermediate = dec.gru1.step(gates[t], cand[t], state, tgt_keep[t])
            attended, _ = dec.attention(intermediate, projected, context, blocked)
            state = dec.gru2(attended, intermediate, tgt_keep[t])
            states.append(state)
            contexts.append(attended)
        t_out = torch.tanh(self.norm_output_state(self.output_state(torch.stack(states)))
                           + self.norm_output_previous(self.output_previous(previous))
                           + self.norm_output_context(self.output_context(torch.stack(contexts))))
        t_out = F.dropout(t_out, self.dropout, self.training)
        return self.output_words(t_out).reshape(-1, self.output_words.out_features)

    def loss(self, source, source_mask, target, target_mask):
        labels = target.masked_fill(target_mask == 0, -100).reshape(-1)
        ce = F.cross_entropy(self.logits(source, source_mask, target, target_mask), labels, ignore_index=-100,
                             label_smoothing=self.label_smoothing, reduction="sum")
        return ce / target.shape[1]


def torch_name(ours):
    """Our parameter name -> this module's (a submodule cannot be called "forward" in torch)."""
    return ours.replace("encoder.forward.", "encoder.forward_gru.").replace("encoder.backward.", "encoder.backward_gru.")


def check(directory):
    torch.set_default_dtype(torch.float64)
    with open(os.path.join(directory, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(directory, "result.json")) as f:
        ours = json.load(f)
    model = RNNSearch(cfg["norm"], cfg["vocab"], cfg["embed"], cfg["hidden"], 0.0, cfg["p"],
                      cfg["label_smoothing"])
    params = dict(model.named_parameters())
    files = sorted(f[:-4] for f in os.listdir(os.path.join(directory, "params")) if f.endswith(".npy"))
    mapped = {torch_name(name): name for name in files}
    missing, extra = sorted(set(params) - set(mapped)), sorted(set(mapped) - set(params))
    if missing or extra:
        raise SystemExit(f"error: parameter names differ: torch only {missing}, ours only {extra}")
    with torch.no_grad():
        for name, p in params.items():
            value = np.load(os.path.join(directory, "params", mapped[name] + ".npy"))
            if tuple(value.shape) != tuple(p.shape):
                raise SystemExit(f"error: {mapped[name]} is {value.shape} in ours, {tuple(p.shape)} here")
            p.copy_(torch.from_numpy(value.astype(np.float64)))
    load = lambda name: np.load(os.path.join(directory, name + ".npy"))
    source, target = (torch.from_numpy(load(n).astype(np.int64)) for n in ("source", "target"))
    source_mask, target_mask = (torch.from_numpy(load(n).astype(np.float64)) for n in ("source_mask", "target_mask"))
    model.train()  # dropout is 0: train and eval agree
    loss = model.loss(source, source_mask, target, target_mask)
    loss.backward()
    grad_norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in params.values()))
    # Per parameter max |ours - torch| / max |torch|; a gradient that is 0 in exact arithmetic (the score
    # bias b_v: softmax ignores a shift) is measured against 1e-3 of the largest gradient anywhere instead.
    largest = max(float(p.grad.abs().max()) for p in params.values())
    worst, worst_name = 0.0, ""
    for name, p in params.items():
        path = os.path.join(directory, "grads", mapped[name] + ".npy")
        if os.path.exists(path):
            g = torch.from_numpy(np.load(path).astype(np.float64))
            diff = float((g - p.grad).abs().max()) / max(float(p.grad.abs().max()), 1e-3 * largest)
            if diff > worst:
                worst, worst_name = diff, mapped[name]
    rel = lambda a, b: abs(a - b) / max(abs(b), 1e-30)
    print(json.dumps({"norm": cfg["norm"], "parameters": sum(p.numel() for p in params.values()),
                      "our_parameters": ours["parameters"], "loss_ours": ours["loss"], "loss_torch": loss.item(),
                      "loss_rel_diff": float(f"{rel(ours['loss'], loss.item()):.3g}"),
                      "grad_norm_ours": ours["grad_norm"], "grad_norm_torch": grad_norm,
                      "grad_norm_rel_diff": float(f"{rel(ours['grad_norm'], grad_norm):.3g}"),
                      "worst_grad_rel_diff": float(f"{worst:.3g}"), "worst_grad": worst_name}), flush=True)


def main():
    args = torch_timing.checked_model_args("rnnsearch", NORMS, check)
    model = RNNSearch(args.norm, args.vocab, args.embed, args.hidden, args.dropout, args.p, args.label_smoothing)
    model.train()
    inputs = translation_batch(args.batch, args.src_len, args.tgt_len, args.vocab)
    params = list(model.parameters())
    step = torch_timing.compiled_step(args, params, model.loss, *inputs)
    timing = torch_timing.training_step_fields(step, args.steps, args.warmup)
    torch_timing.print_json({"impl": torch_timing.impl(args), "norm": args.norm,
                             "threads": args.threads, "batch": args.batch, "src_len": inputs[0].shape[0],
                             "tgt_len": inputs[2].shape[0], "vocab": args.vocab,
                             "embed": args.embed, "hidden": args.hidden,
                             "parameters": sum(p.numel() for p in params), **timing})


if __name__ == "__main__":
    main()
