"""Order-embedding model (Vendrov et al. 2016) in PyTorch, as in the RMSNorm paper's
experiment, to time one training step beside our C++ bench.

    /usr/bin/python3 bench/order_embedding_torch.py --norm rmsnorm --threads 1 [--steps 20] [--warmup 3]
        [--batch 128] [--vocab 3000] [--emb 300] [--hidden 1024] [--image-dim 2048]
        [--method order|cosine] [--p 0.0625] [--compile]

Prints one JSON line: {"impl": "torch", "norm", "method", "threads", "batch", "vocab", "emb",
"hidden", "image_dim", "max_len", "ms_per_step" (median of the timed steps), "ms_min"}. With --compile
the loss (forward and, through AOTAutograd, backward; the Python time loop unrolled into one graph,
then a graph break at the loss's boolean off-diagonal masks, whose shapes depend on the data) runs
under torch.compile with its CPU backend (Inductor), "impl" is then "torch.compile", and the
compilation happens in the warm-up steps (at least one), outside the timing.

Data, fixed for every step: caption b has length L_b = 6 + (5 b) % 12; token ids uniform in
[4, vocab) from numpy RandomState(0) (drawn as one [max_len, batch] array, then zero-padded past
L_b); mask[t, b] = 1 for t < L_b; images [batch, image_dim] ~ N(0, 1) from the same RandomState.
Parameters (torch.manual_seed(0), float32): embedding ~ N(0, 0.1); GRU input weights ~ N(0, 0.01),
biases 0; recurrent U_g = two orthogonal H x H blocks, U_c orthogonal; image Linear Glorot-uniform,
bias 0; norm gains 1 (and layernorm biases 0).

GRU (Nematus form, four normalized groups):
    xg = norm_xg(x W_xg^T + b_g) [T,B,2H],  xc = norm_xc(x W_xc^T + b_c) [T,B,H]  (whole sequence)
    g = xg[t] + norm_hg(h U_g^T);  r = sigmoid(g[:, :H]);  u = sigmoid(g[:, H:])
    c = tanh(xc[t] + r * norm_hc(h U_c^T));  h = m (u h + (1 - u) c) + (1 - m) h,  h0 = 0
Norms over the last axis (the gate groups jointly over 2H): layernorm (eps 1e-5, gain and bias),
rmsnorm x * rsqrt(mean(x^2) + 1e-5) * gain, prmsnorm the same with the mean of squares over the
first max(1, floor(n p)) units only, none. Sentence vector = last h; image vector = Linear(image).
Both l2-normalized (x / sqrt(sum x^2 + 1e-8)), then abs for --method order.
Loss summed over i != j of max(0, margin - E[i,j] + E[j,j]) + max(0, margin - E[i,j] + E[i,i]),
E[i,j] = sum_d max(0, s[i,d] - im[j,d])^2 (order, margin 0.05) or -s[i].im[j] (cosine, margin 0.2).
One step: zero grads, forward, backward, each parameter's gradient clipped separately to norm 2.0,
Adam lr 1e-3. The embedding gradient is dense (torch's default, sparse=False).
"""
import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F

import recipe
import torch_timing
from torch_norms import Norm
from torch_tokens import random_tokens


class OrderEmbedding(nn.Module):
    def __init__(self, norm, vocab, emb, hidden, image_dim, p):
        super().__init__()
        h = hidden
        self.hidden = h
        self.embedding = nn.Embedding(vocab, emb)
        self.w_xg = nn.Parameter(torch.empty(2 * h, emb))
        self.b_g = nn.Parameter(torch.zeros(2 * h))
        self.w_xc = nn.Parameter(torch.empty(h, emb))
        self.b_c = nn.Parameter(torch.zeros(h))
        self.u_g = nn.Parameter(torch.empty(2 * h, h))
        self.u_c = nn.Parameter(torch.empty(h, h))
        self.norm_xg, self.norm_xc = Norm(norm, 2 * h, p), Norm(norm, h, p)
        self.norm_hg, self.norm_hc = Norm(norm, 2 * h, p), Norm(norm, h, p)
        self.image = nn.Linear(image_dim, h)
        with torch.no_grad():
            nn.init.normal_(self.embedding.weight, 0.0, 0.1)
            nn.init.normal_(self.w_xg, 0.0, 0.01)
            nn.init.normal_(self.w_xc, 0.0, 0.01)
            nn.init.orthogonal_(self.u_g[:h])
            nn.init.orthogonal_(self.u_g[h:])
            nn.init.orthogonal_(self.u_c)
            nn.init.xavier_uniform_(self.image.weight)
            nn.init.zeros_(self.image.bias)

    def encode_sentences(self, tokens, mask):
        x = self.embedding(tokens)  # [T, B, emb]
        xg = self.norm_xg(F.linear(x, self.w_xg, self.b_g))
        xc = self.norm_xc(F.linear(x, self.w_xc, self.b_c))
        h = x.new_zeros(tokens.shape[1], self.hidden)
        n = self.hidden
        for t in range(tokens.shape[0]):
            g = xg[t] + self.norm_hg(h @ self.u_g.T)
            r, u = torch.sigmoid(g[:, :n]), torch.sigmoid(g[:, n:])
            c = torch.tanh(xc[t] + r * self.norm_hc(h @ self.u_c.T))
            m = mask[t][:, None]
            h = m * (u * h + (1 - u) * c) + (1 - m) * h
        return h


def l2norm(x):
    return x / torch.sqrt(x.pow(2).sum(1, keepdim=True) + 1e-8)


def contrastive_loss(s, im, method, margin):
    if method == "order":
        errors = (s[:, None, :] - im[None, :, :]).clamp(min=0).pow(2).sum(2)
    else:
        errors = -(s @ im.T)
    d = errors.diagonal()
    cost_s = (margin - errors + d[None, :]).clamp(min=0)
    cost_im = (margin - errors + d[:, None]).clamp(min=0)
    off = ~torch.eye(len(s), dtype=torch.bool)
    return cost_s[off].sum() + cost_im[off].sum()


def make_batch(batch, vocab, image_dim):
    rng = np.random.RandomState(0)
    tokens, mask = random_tokens(rng, [6 + (5 * b) % 12 for b in range(batch)], vocab)
    images = rng.standard_normal((batch, image_dim)).astype(np.float32)
    return tokens, mask, torch.from_numpy(images), tokens.shape[0]


def main():
    parser = torch_timing.model_parser(steps=20, warmup=3, norms=["none", "layernorm", "rmsnorm", "prmsnorm"],
                                       p=0.0625)
    recipe.add_flags(parser, "order_embedding", word_dim="emb")
    torch_timing.add_compile_flag(parser)
    args = torch_timing.parse_args(parser)
    model = OrderEmbedding(args.norm, args.vocab, args.emb, args.hidden, args.image_dim, args.p)
    tokens, mask, images, max_len = make_batch(args.batch, args.vocab, args.image_dim)
    margin = 0.05 if args.method == "order" else 0.2

    def loss():
        s = l2norm(model.encode_sentences(tokens, mask))
        im = l2norm(model.image(images))
        if args.method == "order":
            s, im = s.abs(), im.abs()
        return contrastive_loss(s, im, args.method, margin)

    params = list(model.parameters())
    step = torch_timing.compiled_step(args, params, loss)
    timing = torch_timing.training_step_fields(step, args.steps, args.warmup)
    torch_timing.print_json({"impl": torch_timing.impl(args), "norm": args.norm,
                             "method": args.method, "threads": args.threads,
                             "batch": args.batch, "vocab": args.vocab, "emb": args.emb, "hidden": args.hidden,
                             "image_dim": args.image_dim, "max_len": max_len, **timing})


if __name__ == "__main__":
    main()
