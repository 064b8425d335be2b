"""ConvPool-CNN-C in PyTorch, layer for layer as models/convpool_cnn.cpp, to time
a training step beside ours (bench/bench_convpool.sh).

    /usr/bin/python3 bench/convpool_torch.py --norm rmsnorm --width 0.5 --batch 100 --threads 2 --steps 10

One training step = forward (Gaussian input noise σ 0.15, dropout 0.5 after each
max-pool), cross-entropy, backward and an Adam step. Norms as ours: after each
conv and the dense layer; on conv maps LayerNorm / RMSNorm / pRMSNorm / L2-Norm
normalize each sample's channel over H×W with a gain and bias per channel
(written with plain torch ops: torch 1.13 has no RMSNorm), BatchNorm per
channel, WeightNorm by torch.nn.utils.weight_norm; a layer followed by a norm
with a bias drops its own; ε 1e-6 inside the square root; pRMSNorm's RMS from
the first max(1, floor(n·p)) units, the 10-unit output layer using all units.
Prints one JSON line: {"impl": "torch", "norm", "width", "batch", "threads", "step_ms", "steps"}.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RowNorm(nn.Module):
    """LayerNorm / RMSNorm / pRMSNorm / L2-Norm over the last axis (features) or H×W (channels)."""

    def __init__(self, kind, size, channels, p, eps):
        super().__init__()
        self.kind, self.channels, self.p, self.eps = kind, channels, p, eps
        self.gain = nn.Parameter(torch.ones(size))
        self.bias = nn.Parameter(torch.zeros(size))

    def forward(self, x):
        rows = x.flatten(2) if self.channels else x  # [N, C, HW] or [N, F]
        n = rows.shape[-1]
        if self.kind == "layernorm":
            mu = rows.mean(-1, keepdim=True)
            y = (rows - mu) * torch.rsqrt((rows - mu).pow(2).mean(-1, keepdim=True) + self.eps)
        else:
            k = max(1, math.floor(n * self.p)) if self.kind == "prmsnorm" else n
            if self.kind == "prmsnorm" and not self.channels and k < 4:
                k = n
            sq = rows[..., :k].pow(2)
            denom = sq.sum(-1, keepdim=True) if self.kind == "l2norm" else sq.mean(-1, keepdim=True)
            y = rows * torch.rsqrt(denom + self.eps)
        y = y.reshape(x.shape)
        shape = (1, -1, 1, 1) if self.channels else (1, -1)
        return y * self.gain.view(shape) + self.bias.view(shape)


def make_norm(kind, size, channels, p, eps):
    if kind in ("none", "weightnorm"):
        return nn.Identity()
    if kind == "batchnorm":
        return (nn.BatchNorm2d if channels else nn.BatchNorm1d)(size, eps=eps)
    return RowNorm(kind, size, channels, p, eps)


class ConvPoolCnnC(nn.Module):
    def __init__(self, norm, width, p=0.125, eps=1e-6):
        super().__init__()
        c1, c2 = max(1, round(96 * width)), max(1, round(192 * width))
        layer_bias = norm in ("none", "weightnorm")
        wn = (lambda m: nn.utils.weight_norm(m)) if norm == "weightnorm" else (lambda m: m)
        specs = [(3, c1, 3, 1), (c1, c1, 3, 1), (c1, c1, 3, 1), (c1, c2, 3, 1), (c2, c2, 3, 1), (c2, c2, 3, 1),
                 (c2, c2, 3, 0), (c2, c2, 1, 0), (c2, c2, 1, 0)]
        self.convs = nn.ModuleList(wn(nn.Conv2d(i, o, k, padding=pad, bias=layer_bias)) for i, o, k, pad in specs)
        self.norms = nn.ModuleList(make_norm(norm, o, True, p, eps) for _, o, _, _ in specs)
        self.dense = wn(nn.Linear(c2, 10, bias=layer_bias))
        self.dense_norm = make_norm(norm, 10, False, p, eps)

    def block(self, i, x):
        return F.leaky_relu(self.norms[i](self.convs[i](x)), 0.1)

    def forward(self, x):
        if self.training:
            x = x + 0.15 * torch.randn_like(x)
        for i in range(3):
            x = self.block(i, x)
        x = F.dropout(F.max_pool2d(x, 2), 0.5, self.training)
        for i in range(3, 6):
            x = self.block(i, x)
        x = F.dropout(F.max_pool2d(x, 2), 0.5, self.training)
        for i in range(6, 9):
            x = self.block(i, x)
        return self.dense_norm(self.dense(x.mean(dim=(2, 3))))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--norm", default="layernorm")
    parser.add_argument("--width", type=float, default=0.5)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = ConvPoolCnnC(args.norm, args.width)
    adam = torch.optim.Adam(model.parameters(), lr=3e-3 if args.norm != "none" else 3e-4)
    images = torch.randn(args.batch, 3, 32, 32)
    labels = torch.randint(0, 10, (args.batch,))

    def step():
        loss = F.cross_entropy(model(images), labels)
        adam.zero_grad()
        loss.backward()
        adam.step()

    for _ in range(2):
        step()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1000.0)
    print(json.dumps({"impl": "torch", "norm": args.norm, "width": args.width, "batch": args.batch,
                      "threads": args.threads, "step_ms": round(statistics.median(times), 2), "steps": args.steps}),
          flush=True)


if __name__ == "__main__":
    main()
